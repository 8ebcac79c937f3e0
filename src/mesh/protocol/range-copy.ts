/**
 * A node's copy of the whole replicated range from its peers: what a node
 * whose store holds nothing does first (a join), instead of reconciling
 * (reconciling an empty store sends every root's key list both ways).
 *
 * One copy per node, whatever the number of peers. The first peer asked
 * also gives the positions that cut its range into `COPY_SLICES` slices of
 * about equal roots (`splitPoints`); the slices are then fetched from the
 * connected peers at once, each slice from one peer, a few pages ahead,
 * and applied strictly in key order: the store sees one ordered stream of
 * pages, as from a single peer, so its bulk path (large transactions,
 * search built once behind them) and its rule that no record is ever half
 * applied hold unchanged. A peer that fails or leaves hands its slice, from
 * where it stopped, to another; with one peer the slices follow each other.
 *
 * Where the copy stands (the slice bounds, the slice being applied and the
 * last key applied in it) is kept in the store (`mesh:copy`), written after
 * each page is applied: a node killed or stopped mid-copy continues where
 * it stopped, from whichever peers it finds. Once the range is in, every
 * peer's next round reconciles (peer-sync.ts): only what changed during the
 * copy, or what one peer held that another lacked, moves then; except
 * the peer that served every page, whose log continues from the head it
 * read before its first page, as a cursor pull from one peer always did.
 *
 * A slice holds the keys after its start up to and including the next
 * slice's start. Starts are root keys (`file:<rid>`), so a root's own entry
 * ends one slice and its fields begin the next: the pages still follow
 * each other in key order and the store applies the root whole.
 */
import type { SnapMessage, SnapshotMessage } from '../messages.js'
import type { MeshOptions } from './options.js'
import type { BulkPage, PeerKey, RemoteEntry, ReplicaStore } from './runtime.js'

export const COPY_KEY = 'mesh:copy'
/** Slices a copy is cut into when the first peer can say where. */
export const COPY_SLICES = 8
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

interface CopyState {
  /** Slice starts: slice i holds the keys after bounds[i] up to and including bounds[i + 1] (the last, to the end). bounds[0] is null. */
  bounds: Array<string | null>
  /** The slice being applied, and where in it (the last key applied; its start when none). */
  at: number
  after: string | null
  expected?: number
  /** The peer that gave the first page, its log and the head it read then; `mixed`: a page came from another peer or log. */
  lead?: { peer: PeerKey, log: string, head: string | null }
  mixed?: boolean
  /** Not begun: the first page (which gives the slices) is still to ask for. */
  fresh?: boolean
}

/** How a copy ended for a peer: `cursor`, for the peer that served every page, is where its log continues (its head at the first page). */
export interface CopyOutcome {
  done: boolean
  cursor?: { log: string, head: string | null }
}

export interface RangeCopyDeps {
  store: ReplicaStore
  opts: Pick<MeshOptions, 'pageBytes'>
  track: <T>(p: Promise<T>) => Promise<T>
  log: (msg: string, fields?: Record<string, unknown>) => void
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
class SliceFetch {
  readonly pages: SnapshotMessage[] = []
  /** The slice's last page is fetched. */
  complete = false
  source: CopySource | undefined
  private filling = false
  private wake: (() => void) | undefined

  constructor (readonly end: string | null, private pos: string | null, private readonly pageBytes: number) {}

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
          // Failed or refused: the slice goes to another peer, from here.
          if (this.source === src) this.source = undefined
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

export class RangeCopy {
  private readonly sources = new Map<PeerKey, { src: CopySource, release: (r: CopyOutcome) => void }>()
  private running: Promise<void> | undefined
  private state: CopyState | undefined | null = null

  constructor (private readonly d: RangeCopyDeps) {}

  /** A copy is under way (started and not finished), or due (the store holds nothing and never copied). */
  get active (): boolean {
    return this.load() !== undefined
  }

  /** This peer serves the copy now. */
  serving (peer: PeerKey): boolean {
    return this.sources.has(peer)
  }

  /** Starts a copy from `after` (an older version's resync from a peer, kept in its cursor row; or a peer that cannot reconcile), unless one runs. */
  async adopt (after: string | null, lead?: CopyState['lead']): Promise<void> {
    if (this.load() !== undefined) return
    await this.save(after === null && lead === undefined ? { bounds: [null], at: 0, after, fresh: true } : { bounds: [null], at: 0, after, ...(lead === undefined ? {} : { lead }) })
  }

  /**
   * Serves the copy with this peer until it is done ('done': the range is
   * in) or no longer needs or can use it ('stop': it failed, left, or the
   * copy cannot go on now).
   */
  async help (src: CopySource): Promise<CopyOutcome> {
    this.sources.get(src.peer)?.release({ done: false })
    const out = new Promise<CopyOutcome>((resolve) => { this.sources.set(src.peer, { src, release: resolve }) })
    this.running ??= this.run().then((ended) => {
      this.running = undefined
      // Whoever still waits: the copy ended, or cannot go on with them now.
      for (const [peer, s] of this.sources) {
        this.sources.delete(peer)
        const lead = ended?.lead
        s.release(ended === undefined ? { done: false } : { done: true, ...(lead !== undefined && lead.peer === peer && ended.mixed !== true ? { cursor: { log: lead.log, head: lead.head } } : {}) })
      }
    }, (err: unknown) => {
      this.running = undefined
      this.d.log('range copy failed', { err })
      for (const [peer, s] of this.sources) { this.sources.delete(peer); s.release({ done: false }) }
    })
    return await out
  }

  /** The peer left: its slices go to others. */
  leave (peer: PeerKey): void {
    const s = this.sources.get(peer)
    if (s === undefined) return
    this.sources.delete(peer)
    s.release({ done: false })
  }

  private usable (): CopySource[] {
    return [...this.sources.values()].map(s => s.src).filter(s => s.usable())
  }

  /** The first page, which also gives the slices; false when it cannot be had now. */
  private async begin (fetches: Map<number, SliceFetch>): Promise<CopyState | undefined> {
    const first = this.usable()[0]
    if (first === undefined) return undefined
    const reply = await first.ask({ t: 'snap', after: null, maxBytes: this.d.opts.pageBytes, split: COPY_SLICES })
    if (reply === undefined) {
      this.leave(first.peer)
      return undefined
    }
    first.started()
    const bounds = [null, ...(reply.splits ?? []).filter(k => k.startsWith('file:'))]
    this.d.log('copying the range', { peer: first.peer, slices: bounds.length, records: reply.records })
    const f = new SliceFetch(bounds[1] ?? null, null, this.d.opts.pageBytes)
    f.seed(reply)
    f.source = first
    fetches.set(0, f)
    return { bounds, at: 0, after: null, lead: { peer: first.peer, log: reply.log, head: reply.head }, ...(reply.records === undefined ? {} : { expected: reply.records }) }
  }

  /** Gives each slice from the one applied now on a peer, stealing one from a later slice for the current one if none is free. */
  private assign (s: CopyState, fetches: Map<number, SliceFetch>): void {
    for (let i = s.at; i < s.bounds.length; i++) {
      let f = fetches.get(i)
      if (f === undefined) {
        f = new SliceFetch(s.bounds[i + 1] ?? null, i === s.at ? s.after : s.bounds[i], this.d.opts.pageBytes)
        fetches.set(i, f)
      }
      if (f.complete || (f.source !== undefined && f.source.usable())) continue
      const busy = new Set([...fetches.values()].filter(x => !x.complete).map(x => x.source?.peer))
      const free = this.usable().find(x => !busy.has(x.peer))
      if (free !== undefined) {
        f.assign(free)
        continue
      }
      if (i !== s.at) break
      // The slice applied now comes first: the peer of the furthest slice ahead turns to it.
      const later = [...fetches.entries()].filter(([j, x]) => j > i && !x.complete && x.source?.usable() === true).sort((a, b) => b[0] - a[0])[0]
      if (later === undefined) break
      const peer = later[1].source!
      later[1].source = undefined
      f.assign(peer)
    }
  }

  /** Runs the copy while peers serve it; its last state once the whole range is in, undefined when it cannot go on now. */
  private async run (): Promise<CopyState | undefined> {
    const fetches = new Map<number, SliceFetch>()
    const kept = this.load()
    let state = kept === undefined || kept.fresh === true ? await this.begin(fetches) : kept
    if (state === undefined) return undefined
    for (;;) {
      const s: CopyState = state
      this.assign(s, fetches)
      const slice = fetches.get(s.at)!
      const src = slice.source
      const page = await slice.take()
      if (page === undefined) {
        if (src !== undefined && !src.usable()) this.leave(src.peer)
        if (this.usable().length > 0) continue
        // No peer to go on with now: the next round of any peer continues from here.
        if (this.load() === undefined) await this.save(s)
        return undefined
      }
      const last = slice.ends(page.next)
      const end = slice.end
      const entries = last && end !== null ? page.entries.filter(e => e.key <= end) : page.entries
      const done = last && s.at === s.bounds.length - 1
      const via = slice.source ?? src ?? this.usable()[0]
      if (via === undefined) return undefined
      await via.applyPage(entries, { done, ...(s.expected === undefined ? {} : { expectedRecords: s.expected }) })
      const mixed = s.mixed === true || s.lead === undefined || via.peer !== s.lead.peer || page.log !== s.lead.log
      if (done) {
        await this.clear()
        this.d.log('range copied', { slices: s.bounds.length })
        return { ...s, mixed }
      }
      if (last) fetches.delete(s.at)
      state = last ? { ...s, at: s.at + 1, after: s.bounds[s.at + 1], mixed } : { ...s, after: page.next, mixed }
      await this.save(state)
    }
  }

  private load (): CopyState | undefined {
    if (this.state === null) {
      const raw = this.d.store.getLocal(COPY_KEY)
      this.state = raw === undefined ? undefined : parseState(raw)
    }
    return this.state
  }

  private async save (s: CopyState): Promise<void> {
    this.state = s
    await this.d.track(this.d.store.setLocal(COPY_KEY, JSON.stringify(s)))
  }

  private async clear (): Promise<void> {
    this.state = undefined
    await this.d.track(this.d.store.setLocal(COPY_KEY, null))
  }
}

function parseState (raw: string): CopyState | undefined {
  try {
    const o = JSON.parse(raw) as CopyState
    if (Array.isArray(o.bounds) && o.bounds.length > 0 && Number.isSafeInteger(o.at) && o.at >= 0 && o.at < o.bounds.length) return o
  } catch {
    // Unreadable: the store holds part of a range; peers' rounds reconcile the rest.
  }
  return undefined
}
