#!/usr/bin/env node
// Docker HEALTHCHECK for the node in this container: exit 0 when GET /health answers
// {"status":"ok"}, 1 otherwise (down, storage unavailable, no answer in 4 s). Plain
// JavaScript on purpose: it runs every few seconds and must not load the sources.
const env = process.env
let host = env.META_CORE_HTTP_HOST || '127.0.0.1'
if (host === '0.0.0.0') host = '127.0.0.1'
if (host === '::' || host === '[::]') host = '::1'
if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`
const port = env.META_CORE_HTTP_PORT || '9000'

try {
  const res = await fetch(`http://${host}:${port}/health`, { signal: AbortSignal.timeout(4000) })
  const body = await res.json()
  if (res.ok && body.status === 'ok') process.exit(0)
  console.error(`unhealthy: ${res.status} ${JSON.stringify(body)}`)
} catch (err) {
  console.error(`unhealthy: ${err instanceof Error ? err.message : String(err)}`)
}
process.exit(1)
