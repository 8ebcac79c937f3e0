/**
 * The mesh's lines at `info` about its peers: connected, disconnected, a
 * full resync started, caught up (with what came in since the catch-up
 * began: pages, MB, seconds). Each is said once per change of state
 * (a second "connected" for a peer already connected says nothing), with
 * the peer's id and address, and at most MAX_PER_WINDOW lines per peer per
 * WINDOW_MS: a peer that flaps is summed up (`suppressed`) on the next line
 * said for it instead of flooding the log.
 *
 * Sync states come from the core's status, looked at every second
 * (`observe`), so the core stays free of logging policy: a resync is seen
 * by its counter even when it began and ended between two looks.
 *
 * This is the one place that says a peer was caught up with: the progress
 * lines of a long catch-up (sync-progress-log.ts) stop without a line of
 * their own.
 */
import type { Logger } from '../../common/index.js'
import type { PeerStatus } from '../protocol/index.js'

const WINDOW_MS = 60_000
const MAX_PER_WINDOW = 6

type Kind = 'link' | 'sync'

interface PeerLine {
  link: 'connected' | 'disconnected' | undefined
  sync: 'resyncing' | 'caught-up' | undefined
  resyncs: number
  addr: string | undefined
  /** When the current connection opened: a catch-up reached before it is the last connection's. */
  connectedAt: number
  /** The peer's page and byte counters at the last look, and where the current catch-up began (its figures are the difference). */
  seen: { pages: number, bytes: number }
  began: { at: number, pages: number, bytes: number }
  windowStart: number
  lines: number
  suppressed: number
}

export class PeerLog {
  private readonly peers = new Map<string, PeerLine>()

  constructor (private readonly log: Logger, private readonly now: () => number = Date.now) {}

  connected (peer: string, addr: string | undefined, direction: string | undefined): void {
    const p = this.line(peer)
    p.addr = addr ?? p.addr
    if (p.link !== 'connected') {
      p.connectedAt = this.now()
      p.began = { at: p.connectedAt, ...p.seen }
    }
    // A new connection starts a new catch-up: it is said again once reached.
    p.sync = undefined
    this.change(p, 'link', 'connected', 'peer connected', { peer, addr: p.addr, direction })
  }

  disconnected (peer: string): void {
    const p = this.peers.get(peer)
    if (p === undefined) return
    p.sync = undefined
    this.change(p, 'link', 'disconnected', 'peer disconnected', { peer, addr: p.addr })
  }

  /** The core's view of its peers: says when a connected one starts a full resync or catches up. */
  observe (peers: readonly PeerStatus[]): void {
    for (const s of peers) {
      const p = this.peers.get(s.peerId)
      if (p === undefined || p.link !== 'connected' || !s.connected) continue
      const fields = { peer: s.peerId, addr: p.addr }
      if (s.resyncing || s.resyncs > p.resyncs) {
        const why = s.cursor === null ? 'first sync with this peer' : 'its change log cannot serve our cursor'
        if (p.sync !== 'resyncing') p.began = { at: this.now(), ...p.seen }
        this.change(p, 'sync', 'resyncing', 'full resync from peer started', { ...fields, why })
      }
      p.resyncs = s.resyncs
      if (!s.resyncing && !s.behind && s.caughtUpAt !== null && s.caughtUpAt >= p.connectedAt) this.change(p, 'sync', 'caught-up', 'caught up with peer',
        { ...fields, ...this.figures(p, s) })
      p.seen = { pages: s.pagesIn, bytes: s.bytesIn }
    }
  }

  /** What came in since the catch-up began, when anything did (a peer with nothing new says only that it is caught up). */
  private figures (p: PeerLine, s: PeerStatus): Record<string, number> {
    const pages = s.pagesIn - p.began.pages
    if (pages <= 0) return {}
    const mb = (s.bytesIn - p.began.bytes) / 1e6
    return { pages, mb: Number(mb.toFixed(1)), seconds: Math.round((this.now() - p.began.at) / 1000) }
  }

  private change<K extends Kind> (p: PeerLine, kind: K, state: NonNullable<PeerLine[K]>, msg: string, fields: Record<string, unknown>): void {
    if (p[kind] === state) return
    p[kind] = state
    const now = this.now()
    if (now - p.windowStart >= WINDOW_MS) {
      p.windowStart = now
      p.lines = 0
    }
    if (p.lines >= MAX_PER_WINDOW) {
      p.suppressed++
      return
    }
    p.lines++
    const extra = p.suppressed > 0 ? { suppressed: p.suppressed } : {}
    p.suppressed = 0
    this.log.info(msg, { ...fields, ...extra })
  }

  private line (peer: string): PeerLine {
    let p = this.peers.get(peer)
    if (p === undefined) {
      const now = this.now()
      p = { link: undefined, sync: undefined, resyncs: 0, addr: undefined, connectedAt: now, seen: { pages: 0, bytes: 0 },
        began: { at: now, pages: 0, bytes: 0 }, windowStart: now, lines: 0, suppressed: 0 }
      this.peers.set(peer, p)
    }
    return p
  }
}
