/**
 * The pieces a copy of the range is made of (range-copy.ts): where to cut a
 * store's range into slices of about equal roots, and one slice's pages,
 * fetched from one peer at a time a few pages ahead of the apply.
 *
 * A slice holds the keys after its start up to and including the next
 * slice's start. Starts are root keys (`file:<rid>`), so a root's own entry
 * ends one slice and its fields begin the next: the pages still follow
 * each other in key order and the store applies the root whole.
 */
import type { SnapMessage, SnapshotMessage } from '../messages.js'
import type { BulkPage, PeerKey, RemoteEntry, ReplicaStore } from './runtime.js'

/** Pages a slice's fetch keeps ready ahead of the apply. */
const PAGES_AHEAD = 2
/** A sample of at least this many roots per slice places the cuts. */
const SAMPLE_PER_SLICE = 64
const POSITION_DIGITS = 4

/** A peer serving the copy: its requests go through its own pull (counted there), its pages through its own screen. */
export interface CopySource {
  readonly peer: PeerKey
  usable: () => boolean
  ask: (req: SnapMessage) => Promise<SnapshotMessage | undefined>
  applyPage: (entries: RemoteEntry[], bulk: BulkPage) => Promise<void>
  /** The copy started with this peer's first page. */
  started: () => void
}

/**
 * Positions cutting the store's range into `n` slices of about equal roots:
 * root keys at the quantiles of a uniform sample of the roots (those whose
 * position, a hash of the id, starts with zeros), sorted by id. Few roots:
 * no cut.
 */
export function splitPoints (store: Pick<ReplicaStore, 'rangeFingerprint' | 'rangeRoots'>, n: number): string[] {
  const total = store.rangeFingerprint('').roots
  if (n < 2 || total < n * 2) return []
  let digits = 0
  while (digits < POSITION_DIGITS && total / 16 ** (digits + 1) >= SAMPLE_PER_SLICE * n) digits++
  const sample = store.rangeRoots('0'.repeat(digits), Infinity).map(r => r.rid).sort()
  const out: string[] = []
  for (let i = 1; i < n; i++) {
    const key = `file:${sample[Math.floor((i * sample.length) / n)]}`
    if (sample.length >= n && (out.length === 0 || key > out[out.length - 1])) out.push(key)
  }
  return out
}

/** One slice's pages, fetched from one peer at a time, a few ahead of the apply. */
export class SliceFetch {
  readonly pages: SnapshotMessage[] = []
  /** The slice's last page is fetched. */
  complete = false
  source: CopySource | undefined
  private filling = false
  private wake: (() => void) | undefined

  /** `failed`: a page its peer did not serve (a failed request, a refusal): that peer stops serving the copy for now. */
  constructor (readonly end: string | null, private pos: string | null, private readonly pageBytes: number, private readonly failed: (peer: PeerKey) => void) {}

  /** A page that reaches the next slice's start ends this one. */
  ends (next: string | null): boolean {
    return next === null || (this.end !== null && next >= this.end)
  }

  /** Takes a fetched first page (the one that gave the cuts). */
  seed (page: SnapshotMessage): void {
    this.pages.push(page)
    this.pos = page.next
    this.complete = this.ends(page.next)
  }

  assign (source: CopySource): void {
    this.source = source
    void this.fill()
  }

  private async fill (): Promise<void> {
    if (this.filling) return
    this.filling = true
    try {
      while (!this.complete && this.pages.length < PAGES_AHEAD) {
        const src = this.source
        if (src === undefined || !src.usable()) break
        const reply = await src.ask({ t: 'snap', after: this.pos, maxBytes: this.pageBytes })
        if (reply === undefined) {
          // Failed or refused: the slice goes to another peer, from here, and this one leaves the copy until its next round.
          if (this.source === src) this.source = undefined
          this.failed(src.peer)
          break
        }
        if (this.source !== src) break // reassigned meanwhile: that fetch goes on from where this one stood
        this.pages.push(reply)
        this.pos = reply.next
        this.complete = this.ends(reply.next)
        this.wake?.()
      }
    } finally {
      this.filling = false
      this.wake?.()
    }
  }

  /** The next page in order; undefined when none can come now (no usable peer for the slice). */
  async take (): Promise<SnapshotMessage | undefined> {
    for (;;) {
      const page = this.pages.shift()
      if (page !== undefined) {
        void this.fill()
        return page
      }
      if (this.source === undefined || !this.source.usable()) return undefined
      if (!this.filling) void this.fill()
      await new Promise<void>((resolve) => { this.wake = resolve })
      this.wake = undefined
    }
  }
}
