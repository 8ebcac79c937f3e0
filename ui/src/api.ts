/**
 * Every call the page makes to a node. A refused request (401) asks the
 * person for the node's token through `tokenPrompt` (the app shows a
 * dialog), then retries with it; failures carry the API's own
 * `{error, message}` so the page can show them as the node said them.
 */
import { getToken, setToken } from './token.js'
import type { ErrorEnvelope } from './wire.js'

export class ApiFailure extends Error {
  constructor (readonly status: number, readonly error: string, message: string, readonly retryable = false) {
    super(message)
  }

  /** "slug: message", as the API put it. */
  get text (): string {
    return this.error === '' ? this.message : `${this.error}: ${this.message}`
  }
}

/** Asks for a token after `reason` (the refusal's message); resolves undefined when the person declines. */
export type TokenPrompt = (origin: string, reason: string) => Promise<string | undefined>

let prompt: TokenPrompt | undefined
let pending: Promise<string | undefined> | undefined

export function setTokenPrompt (p: TokenPrompt): void {
  prompt = p
}

/** One dialog for every request refused at the same moment. */
async function askToken (origin: string, reason: string): Promise<string | undefined> {
  if (prompt === undefined) return undefined
  pending ??= prompt(origin, reason).finally(() => { pending = undefined })
  return await pending
}

export interface CallOptions {
  body?: unknown
  /** A node other than the page's own (mesh digest comparison). */
  origin?: string
  signal?: AbortSignal
  /** Do not ask for a token on 401 (background polling: the foreground asks). */
  quiet?: boolean
}

/** Token prompts for one request before its refusal stands. */
const MAX_TOKEN_PROMPTS = 3

/** Deadline for one API call: the page shows an error rather than spin forever on a stuck node. */
const CALL_TIMEOUT_MS = 20_000

export async function call<T> (method: string, path: string, opts: CallOptions = {}): Promise<T> {
  const origin = opts.origin ?? location.origin
  for (let attempt = 0; ; attempt++) {
    const res = await send(method, origin + path, origin, opts)
    // A wrong token is asked for again (with the node's new message), a few times at most.
    if (res.status === 401 && attempt < MAX_TOKEN_PROMPTS && opts.quiet !== true) {
      const refusal = await failureOf(res)
      const token = await askToken(origin, refusal.message)
      if (token === undefined) throw refusal
      setToken(token, origin)
      continue
    }
    if (!res.ok) throw await failureOf(res)
    const type = res.headers.get('content-type') ?? ''
    return (type.includes('json') ? await res.json() : await res.text()) as T
  }
}

async function send (method: string, url: string, origin: string, opts: CallOptions): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json' }
  const token = getToken(origin)
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  let body: string | undefined
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(opts.body)
  }
  const ctl = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => { timedOut = true; ctl.abort() }, CALL_TIMEOUT_MS)
  const onAbort = (): void => { ctl.abort() }
  opts.signal?.addEventListener('abort', onAbort)
  try {
    return await fetch(url, { method, headers, body, signal: ctl.signal, cache: 'no-store' })
  } catch (err) {
    if (opts.signal?.aborted === true) throw err
    const what = timedOut ? `no answer within ${CALL_TIMEOUT_MS / 1000} s` : 'the node could not be reached'
    throw new ApiFailure(0, 'unreachable', `${what} (${method} ${url})`, true)
  } finally {
    clearTimeout(timer)
    opts.signal?.removeEventListener('abort', onAbort)
  }
}

async function failureOf (res: Response): Promise<ApiFailure> {
  const text = await res.text().catch(() => '')
  try {
    const e = JSON.parse(text) as Partial<ErrorEnvelope>
    if (typeof e.error === 'string') return new ApiFailure(res.status, e.error, String(e.message ?? ''), e.retryable === true)
  } catch { /* not the envelope: a proxy's page; shown below by status */ }
  return new ApiFailure(res.status, `http_${res.status}`, text.slice(0, 200) || res.statusText)
}

/** A field path in a URL: each segment percent-encoded, `/` kept (docs/api.md, `{key…}`). */
export function fieldPath (field: string): string {
  return field.split('/').map(encodeURIComponent).join('/')
}

export function errorText (err: unknown): string {
  if (err instanceof ApiFailure) return err.text
  return err instanceof Error ? err.message : String(err)
}
