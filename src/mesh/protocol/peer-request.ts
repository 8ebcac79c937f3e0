/**
 * One request to a peer and its reply, as a pull or a reconciliation makes
 * it (peer-sync.ts): counted and logged, the reply decoded and checked to be
 * the one asked for. A valid reply carrying the peer's wall clock gives a
 * clock sample (clock-guard.ts); a failure or a refusal gives none, so a
 * member is measured only on what it delivers.
 */
import {
  decodeMessage, encodeMessage, WireError, type ChangesMessage, type ErrorMessage, type PullMessage, type ReconMessage,
  type ReconReplyMessage, type RequestMessage, type RootsMessage, type RootsReplyMessage, type SnapMessage, type SnapshotMessage,
  type TakenMessage
} from '../messages.js'
import type { MeshOptions } from './options.js'
import type { MeshRuntime, PeerKey } from './runtime.js'
import type { PeerCounters } from './status.js'

/** The reply each request is answered with. */
export type ReplyTo<R extends RequestMessage> = R extends PullMessage ? ChangesMessage : R extends SnapMessage ? SnapshotMessage
  : R extends ReconMessage ? ReconReplyMessage : R extends RootsMessage ? RootsReplyMessage : TakenMessage
const REPLY_TYPE = { pull: 'changes', snap: 'snapshot', recon: 'recond', roots: 'rootsd', give: 'taken' } as const

/** Where a request left, for the clock sample its reply gives (clock-guard.ts). */
export interface SentMark { wall: number, mono: number }

export interface RequestContext {
  rt: MeshRuntime
  opts: Pick<MeshOptions, 'requestTimeoutMs'>
  counters: PeerCounters
  mark: () => SentMark
  clockSample: (peer: PeerKey, sent: SentMark, peerWall: number) => void
  log: (msg: string, fields?: Record<string, unknown>) => void
}

/** The reply; `refused`: the peer answered with an error; `failed`: no usable reply (failed, timed out, malformed or not the one asked for). */
export type Asked<R extends RequestMessage> = { reply: ReplyTo<R> } | { refused: ErrorMessage } | { failed: true }

export async function askPeer<R extends RequestMessage> (c: RequestContext, peer: PeerKey, req: R): Promise<Asked<R>> {
  const what = req.t === 'pull' || req.t === 'snap' ? 'pull request' : 'reconciliation request'
  let bytes: Uint8Array
  const sent = c.mark()
  try {
    bytes = await c.rt.request(peer, encodeMessage(req), { timeoutMs: c.opts.requestTimeoutMs })
  } catch (err) {
    c.counters.pullFailures++
    c.log(`${what} failed`, { peer, err })
    return { failed: true }
  }
  try {
    const m = decodeMessage(bytes)
    if (m.t === 'error') {
      c.counters.pullFailures++
      c.log(`peer refused a ${what}`, { peer, code: m.code, message: m.message })
      return { refused: m }
    }
    const want = REPLY_TYPE[req.t]
    if (m.t !== want) throw new WireError(`expected a ${want} reply, got ${m.t}`)
    if ('clock' in m && m.clock !== undefined) c.clockSample(peer, sent, m.clock)
    if (what === 'pull request') c.counters.pagesIn++
    c.counters.bytesIn += bytes.length
    return { reply: m as ReplyTo<R> }
  } catch (err) {
    c.counters.framesRejected++
    c.log('bad reply from peer', { peer, err })
    return { failed: true }
  }
}
