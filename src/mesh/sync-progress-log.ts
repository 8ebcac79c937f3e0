/**
 * A join or a backlog in the log: while a peer is pulled from in a full
 * resync, or is behind, one line every few seconds says from whom, how much
 * came in since it began (pages, MB, MB/s) and the catch-up lag (and, for a
 * join on the bulk path, records and keys taken, records/s and time left).
 * The line that says it caught up is the peer log's (libp2p/peer-log.ts,
 * with the catch-up's figures): one observer per line, so it is said once.
 * Figures are what `GET /api/mesh` reports (its counters), so the log and
 * the API agree; it reads them, never the store.
 */
import type { Logger } from '../common/index.js'
import type { MeshJoinView, MeshPeerView, MeshView } from './service.js'

/** How often a catch-up in progress is logged, in ms: often enough to see it move, rarely enough to read. */
const SYNC_PROGRESS_LOG_MS = 5_000

interface Began { at: number, pages: number, bytes: number, mode: string }

/** Starts the progress lines; returns the function that stops them. */
export function logSyncProgress (status: () => MeshView, log: Logger, everyMs = SYNC_PROGRESS_LOG_MS): () => void {
  const began = new Map<string, Began>()
  const tick = (): void => {
    const now = Date.now()
    const view = status()
    for (const p of view.peers) {
      const mode = p.resyncing ? 'full resync' : p.behind && p.connected ? 'backlog' : undefined
      const b = began.get(p.peerId)
      if (mode === undefined) {
        // Over (caught up, or the peer went): the peer log says so.
        began.delete(p.peerId)
        continue
      }
      if (b === undefined || b.mode !== mode) {
        // The first sighting only marks the start: a catch-up shorter than one interval needs no line.
        began.set(p.peerId, { at: now, pages: p.pagesIn, bytes: p.bytesIn, mode })
        continue
      }
      log.info(`${mode} from ${label(p)}`, { ...figures(p, b, now), lag: `${Math.round(p.lagMs / 1000)} s`,
        ...(mode === 'full resync' ? joinFigures(view.join) : {}) })
    }
  }
  const timer = setInterval(tick, everyMs)
  timer.unref()
  return () => { clearInterval(timer) }
}

/** A join on the bulk path: records and keys taken, the rate, time left (when the peer said how many it holds). */
function joinFigures (j: MeshJoinView): Record<string, unknown> {
  if (!j.active) return {}
  return {
    records: j.records,
    keys: j.keys,
    recordsPerSecond: j.recordsPerSecond,
    ...(j.expectedRecords === null ? {} : { of: j.expectedRecords }),
    ...(j.secondsLeft === null ? {} : { left: `${j.secondsLeft} s` })
  }
}

function label (p: MeshPeerView): string {
  return p.name === null ? p.peerId : `${p.name} (${p.peerId})`
}

function figures (p: MeshPeerView, b: Began, now: number): Record<string, unknown> {
  const mb = (p.bytesIn - b.bytes) / 1e6
  const seconds = Math.max(0.001, (now - b.at) / 1000)
  return { pages: p.pagesIn - b.pages, mb: Number(mb.toFixed(1)), mbPerSecond: Number((mb / seconds).toFixed(1)), seconds: Math.round(seconds) }
}
