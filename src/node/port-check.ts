/**
 * The node's ports, tried before anything is created. A node whose HTTP or
 * p2p port is taken would otherwise open (and on a first start, create) its
 * store and identity key, build search and scan the library, and only then
 * fail to bind, with libp2p's internals for the p2p port. Each port is
 * bound once and released; the real listeners bind moments later (a
 * program taking the port in between still fails the start, later).
 */
import net from 'node:net'
import { MetaCoreError } from '../common/index.js'
import type { NodeConfig } from './config.js'

/** A port the node needs cannot be listened on; the message names it and what to do, one line each. */
export class PortUnavailableError extends MetaCoreError {
  constructor (message: string) {
    super('port_unavailable', message)
  }
}

interface Listen { host: string, port: number, what: string, fix: string }

/** The TCP host and port of a listen multiaddr (`/ip4/0.0.0.0/tcp/4001`, `/ip6/::/tcp/4001`); undefined for another kind. */
function tcpListenOf (addr: string): { host: string, port: number } | undefined {
  const m = /^\/(ip4|ip6)\/([^/]+)\/tcp\/(\d+)(\/|$)/.exec(addr)
  if (m === null) return undefined
  return { host: m[2], port: Number(m[3]) }
}

/** What the configuration will listen on; a port 0 (any free port) needs no check. */
function listensOf (config: Pick<NodeConfig, 'httpHost' | 'httpPort' | 'swarmKeyPath' | 'p2pListen'>): Listen[] {
  const out: Listen[] = []
  if (config.httpPort !== 0) {
    out.push({ host: config.httpHost, port: config.httpPort, what: 'HTTP port', fix: 'choose another with META_CORE_HTTP_PORT (--http-port)' })
  }
  // Without a swarm key the node runs standalone and opens no p2p port.
  if (config.swarmKeyPath !== undefined) {
    for (const a of config.p2pListen) {
      const l = tcpListenOf(a)
      if (l === undefined || l.port === 0) continue
      out.push({ ...l, what: 'p2p port', fix: `choose another in META_CORE_P2P_LISTEN (--p2p-listen), now ${a}` })
    }
  }
  return out
}

async function tryListen (host: string, port: number): Promise<NodeJS.ErrnoException | undefined> {
  return await new Promise((resolve) => {
    const server = net.createServer()
    server.once('error', (err: NodeJS.ErrnoException) => { resolve(err) })
    server.listen({ host, port }, () => { server.close(() => { resolve(undefined) }) })
  })
}

function problemOf (l: Listen, err: NodeJS.ErrnoException): string {
  const at = `${l.what} ${l.port} on ${l.host}`
  switch (err.code) {
    case 'EADDRINUSE': return `${at} is already in use (another meta-core node or another program): stop that program, or ${l.fix}`
    case 'EACCES': return `${at} needs privileges this process lacks (ports below 1024): ${l.fix}`
    case 'EADDRNOTAVAIL': return `${at}: ${l.host} is not an address of this machine: listen on one of its addresses, or 0.0.0.0`
    default: return `${at} cannot be listened on (${err.code ?? err.message}): ${l.fix}`
  }
}

/** Throws PortUnavailableError naming every port that cannot be listened on. */
export async function checkPorts (config: Pick<NodeConfig, 'httpHost' | 'httpPort' | 'swarmKeyPath' | 'p2pListen'>): Promise<void> {
  const problems: string[] = []
  for (const l of listensOf(config)) {
    const err = await tryListen(l.host, l.port)
    if (err !== undefined) problems.push(problemOf(l, err))
  }
  if (problems.length > 0) throw new PortUnavailableError(problems.join('\n'))
}
