/**
 * A node's copy of the whole replicated range from its peers: what a node
 * whose store holds nothing does first (a join), instead of reconciling
 * (reconciling an empty store sends every root's key list both ways).
 *
 * One copy per node, whatever the number of peers. The first peer asked
 * also gives the positions that cut its range into `COPY_SLICES` slices of
 * about equal roots (range-slices.ts `splitPoints`); the slices are then
 * fetched from the connected peers at once, each slice from one peer, a few
 * pages ahead, and applied strictly in key order: the store sees one
 * ordered stream of pages, as from a single peer, so its bulk path (large
 * transactions, search built once behind them) and its rule that no record
 * is ever half applied hold unchanged. A peer that fails or leaves hands
 * its slice, from where it stopped, to another; with one peer the slices
 * follow each other.
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
 * A copy never holds the node hostage:
 * - Only the peers it takes from (those the node never synced with) are
 *   answered `busy` meanwhile (mesh-core.ts); every other peer's pulls and
 *   checks are served.
 * - Why it runs rests on the node's own facts or on pages: an empty store
 *   is the node's own; a copy started because a peer said it holds far more
 *   (copy-claim.ts `CopyClaim`) goes on only if the first page of the range
 *   bears that out (the records it says the range holds), else it is
 *   abandoned at once and that peer's word is not taken again.
 * - A copy no peer has served a page of for `copyStallMs`, none serving it
 *   now (its peers left, or refused its pages), is abandoned: what arrived
 *   is kept (a bulk transfer under way is ended, so its held-back record is
 *   applied and search built), `mesh:copy` goes, and every peer's next
 *   round reconciles.
 * `status()` says what the copy is doing, why it started and why it stopped.
 */
import type { MeshOptions } from './options.js'
import { worthCopying, type CopyClaim } from './copy-claim.js'
import { SliceFetch, type CopySource } from './range-slices.js'
import type { PeerKey, ReplicaStore } from './runtime.js'

export { splitPoints, type CopySource } from './range-slices.js'

export const COPY_KEY = 'mesh:copy'
/** Slices a copy is cut into when the first peer can say where. */
export const COPY_SLICES = 8

interface CopyState {
  /** Slice starts: slice i holds the keys after bounds[i] up to and including bounds[i + 1] (the last, up to `end`). bounds[0] is null. */
  bounds: Array<string | null>
  /** Past the range's last root when the first page was read (`rangeEnd`); absent (a peer that does not say): to the end. */
  end?: string
  /** The slice being applied, and where in it (the last key applied; its start when none). */
  at: number
  after: string | null
  expected?: number
  /** The peer that gave the first page, its log and the head it read then; `mixed`: a page came from another peer or log. */
  lead?: { peer: PeerKey, log: string, head: string | null }
  mixed?: boolean
  /** Not begun: the first page (which gives the slices) is still to ask for. */
  fresh?: boolean
  /** Why the node copies the range (shown on the status). */
  why?: string
  /** The copy rests on what this peer said it holds: its first page must bear it out. */
  claim?: CopyClaim & { peer: PeerKey }
}

/** How a copy ended for a peer: `cursor`, for the peer that served every page, is where its log continues (its head at the first page). */
export interface CopyOutcome {
  done: boolean
  cursor?: { log: string, head: string | null }
}

/** The copy as the mesh status shows it. */
export interface CopyStatus {
  /**
   * `none`: no copy since start; `copying`: peers serve it; `waiting`: under
   * way, no peer serves it now (abandoned after `copyStallMs` without a
   * page); `done`: the range is in; `abandoned`: it stopped before (`stopped`).
   */
  state: 'none' | 'copying' | 'waiting' | 'done' | 'abandoned'
  /** Why the node copies (copied) the range. */
  why: string | null
  /** The peers serving it now. */
  peers: PeerKey[]
  /** When it began and ended (runtime ms); null when not. */
  startedAt: number | null
  endedAt: number | null
  /** Why it was abandoned; null otherwise. */
  stopped: string | null
}

export interface RangeCopyDeps {
  store: ReplicaStore
  opts: Pick<MeshOptions, 'pageBytes' | 'copyStallMs'>
  track: <T>(p: Promise<T>) => Promise<T>
  log: (msg: string, fields?: Record<string, unknown>) => void
  now: () => number
  schedule: (delayMs: number, fn: () => void) => () => void
  /** Ends a bulk transfer an abandoned copy left under way (its held-back record applied, its derived work built). */
  endBulk: () => Promise<void>
}

const WHY_EMPTY = 'the store held nothing'
const WHY_KEPT = 'a copy under way when the node stopped'

export class RangeCopy {
  private readonly sources = new Map<PeerKey, { src: CopySource, release: (r: CopyOutcome) => void }>()
  private running: Promise<void> | undefined
  private state: CopyState | undefined | null = null
  /** Peers whose claim a copy's pages did not bear out: their word does not start another. */
  private readonly distrusted = new Set<PeerKey>()
  private view: Omit<CopyStatus, 'peers'> = { state: 'none', why: null, startedAt: null, endedAt: null, stopped: null }
  /** When a page was last applied (or the copy began): a copy without one for `copyStallMs` is abandoned. */
  private progressAt = 0
  /** Bumped when a copy is abandoned: a run of it still under way stops at its next step. */
  private generation = 0
  private cancelStall: (() => void) | undefined
  private stopped = false

  constructor (private readonly d: RangeCopyDeps) {}

  /** At start: a copy kept from before the node stopped continues, with the same bound on waiting for a peer. */
  start (): void {
    const kept = this.load()
    if (kept === undefined) return
    this.began(kept.why ?? WHY_KEPT)
  }

  stop (): void {
    this.stopped = true
    this.cancelStall?.()
    this.cancelStall = undefined
  }

  /** A copy is under way (started and not finished), or due (the store holds nothing and never copied). */
  get active (): boolean {
    return this.load() !== undefined
  }

  /** This peer serves the copy now. */
  serving (peer: PeerKey): boolean {
    return this.sources.has(peer)
  }

  /** False for a peer whose claim to hold far more than this node a copy's pages did not bear out. */
  believes (peer: PeerKey): boolean {
    return !this.distrusted.has(peer)
  }

  status (): CopyStatus {
    return { ...this.view, peers: [...this.sources.keys()].sort() }
  }

  /** Starts a copy, unless one runs: a peer said it holds far more than this node (`claim`). */
  async adopt (o: { why: string, claim?: CopyState['claim'] }): Promise<void> {
    if (this.load() !== undefined) return
    const s: CopyState = { bounds: [null], at: 0, after: null, fresh: true, why: o.why }
    if (o.claim !== undefined) s.claim = o.claim
    this.began(o.why)
    await this.save(s)
  }

  /**
   * Serves the copy with this peer until it is done ('done': the range is
   * in) or no longer needs or can use it ('stop': it failed, left, or the
   * copy cannot go on now).
   */
  async help (src: CopySource): Promise<CopyOutcome> {
    // A store that holds nothing copies on its own fact: the copy starts with the first peer that serves it (its
    // state is set at once; the row is written meanwhile, tracked, before the first page's).
    if (this.load() === undefined) this.adopt({ why: WHY_EMPTY }).catch((err: unknown) => { this.d.log('keeping the range copy\'s state failed', { err }) })
    this.sources.get(src.peer)?.release({ done: false })
    const out = new Promise<CopyOutcome>((resolve) => { this.sources.set(src.peer, { src, release: resolve }) })
    this.running ??= this.run().then((ended) => {
      this.running = undefined
      // Whoever still waits: the copy ended, or cannot go on with them now.
      for (const [peer, s] of this.sources) {
        this.sources.delete(peer)
        const lead = ended?.lead
        s.release(ended === undefined ? { done: false } : { done: true,
          ...(lead !== undefined && lead.peer === peer && ended.mixed !== true ? { cursor: { log: lead.log, head: lead.head } } : {}) })
      }
      if (ended === undefined) this.waiting()
    }, (err: unknown) => {
      this.running = undefined
      this.d.log('range copy failed', { err })
      for (const [peer, s] of this.sources) { this.sources.delete(peer); s.release({ done: false }) }
      this.waiting()
    })
    return await out
  }

  /** The peer left (or failed a page): its slices go to others. */
  leave (peer: PeerKey): void {
    const s = this.sources.get(peer)
    if (s === undefined) return
    this.sources.delete(peer)
    s.release({ done: false })
  }

  private usable (): CopySource[] {
    return [...this.sources.values()].map(s => s.src).filter(s => s.usable())
  }

  /** A copy begins (or continues after a restart): shown, and bounded in how long it may go without a page. */
  private began (why: string): void {
    this.view = { state: 'waiting', why, startedAt: this.d.now(), endedAt: null, stopped: null }
    this.progressAt = this.d.now()
    this.armStall()
  }

  /** No peer serves the copy now: it waits for one, at most `copyStallMs` since its last page. */
  private waiting (): void {
    if (this.load() === undefined || this.view.state === 'abandoned') return
    this.view = { ...this.view, state: 'waiting' }
    this.armStall()
  }

  private armStall (): void {
    if (this.cancelStall !== undefined || this.stopped) return
    const due = Math.max(1, this.progressAt + this.d.opts.copyStallMs - this.d.now())
    this.cancelStall = this.d.schedule(due, () => {
      this.cancelStall = undefined
      if (this.stopped || this.load() === undefined) return
      if (this.d.now() - this.progressAt < this.d.opts.copyStallMs) { this.armStall(); return }
      const secs = Math.round(this.d.opts.copyStallMs / 1000)
      this.d.track(this.abandon(`no page for ${secs} s: the peers serving it left or refused its pages`)).catch((err: unknown) => { this.d.log('abandoning the range copy failed', { err }) })
    })
  }

  /** Stops the copy, keeping what arrived: every peer's next round reconciles. */
  private async abandon (why: string): Promise<void> {
    this.generation++
    this.cancelStall?.()
    this.cancelStall = undefined
    this.view = { ...this.view, state: 'abandoned', endedAt: this.d.now(), stopped: why }
    this.d.log('range copy abandoned: reconciling instead', { why })
    for (const peer of [...this.sources.keys()]) this.leave(peer)
    await this.clear()
    await this.d.endBulk()
  }

  /** The first page, which also gives the slices (from the peer whose claim the copy rests on, when it serves); undefined when it cannot be had now. */
  private async begin (fetches: Map<number, SliceFetch>, kept: CopyState | undefined): Promise<CopyState | undefined> {
    const claim = kept?.claim
    const usable = this.usable()
    const first = usable.find(x => x.peer === claim?.peer) ?? usable[0]
    if (first === undefined) return undefined
    const gen = this.generation
    const reply = await first.ask({ t: 'snap', after: null, maxBytes: this.d.opts.pageBytes, split: COPY_SLICES })
    if (gen !== this.generation) return undefined
    if (claim !== undefined && (reply === undefined ? first.peer === claim.peer : !worthCopying(reply.records ?? 0, claim.ours))) {
      // The copy rested on this peer's word, and the range's first page does not bear it out.
      this.distrusted.add(claim.peer)
      await this.abandon(reply === undefined
        ? `peer ${claim.peer} said it holds ${claim.roots} roots and did not serve the first page of its range`
        : `peer ${claim.peer} said it holds ${claim.roots} roots; the range's first page says ${reply.records ?? 'nothing of'} its records`)
      return undefined
    }
    if (reply === undefined) {
      this.leave(first.peer)
      return undefined
    }
    first.started()
    const bounds = [null, ...(reply.splits ?? []).filter(k => k.startsWith('file:'))]
    this.d.log('copying the range', { peer: first.peer, slices: bounds.length, records: reply.records })
    const end = reply.end === undefined ? undefined : rangeEnd(reply.end)
    const f = this.slice(bounds[1] ?? end ?? null, null)
    f.seed(reply)
    f.source = first
    fetches.set(0, f)
    const s: CopyState = { bounds, at: 0, after: null, lead: { peer: first.peer, log: reply.log, head: reply.head },
      ...(reply.records === undefined ? {} : { expected: reply.records }), ...(end === undefined ? {} : { end }) }
    if (kept?.why !== undefined) s.why = kept.why
    return s
  }

  private slice (end: string | null, from: string | null): SliceFetch {
    return new SliceFetch(end, from, this.d.opts.pageBytes, (peer) => { this.leave(peer) })
  }

  /** Gives each slice from the one applied now on a peer, stealing one from a later slice for the current one if none is free. */
  private assign (s: CopyState, fetches: Map<number, SliceFetch>): void {
    for (let i = s.at; i < s.bounds.length; i++) {
      let f = fetches.get(i)
      if (f === undefined) {
        f = this.slice(s.bounds[i + 1] ?? s.end ?? null, i === s.at ? s.after : s.bounds[i])
        fetches.set(i, f)
      }
      if (f.complete || (f.source !== undefined && f.source.usable() && this.sources.has(f.source.peer))) continue
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
    const gen = this.generation
    const fetches = new Map<number, SliceFetch>()
    const kept = this.load()
    let state = kept === undefined || kept.fresh === true ? await this.begin(fetches, kept) : kept
    if (state === undefined) return undefined
    this.view = { ...this.view, state: 'copying' }
    for (;;) {
      const s: CopyState = state
      this.assign(s, fetches)
      const slice = fetches.get(s.at)!
      const src = slice.source
      const page = await slice.take()
      if (gen !== this.generation) return undefined
      if (page === undefined) {
        if (src !== undefined && !src.usable()) this.leave(src.peer)
        if (this.usable().length > 0) continue
        // No peer to go on with now: the next round of any peer continues from here, within the stall bound.
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
      if (gen !== this.generation) return undefined
      this.progressAt = this.d.now()
      const mixed = s.mixed === true || s.lead === undefined || via.peer !== s.lead.peer || page.log !== s.lead.log
      if (done) {
        await this.clear()
        this.cancelStall?.()
        this.cancelStall = undefined
        this.view = { ...this.view, state: 'done', endedAt: this.d.now() }
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

/**
 * The last slice's bound for a range whose last root key was `root`
 * (`file:<rid>`): past every key of that root (`file:<rid>/…` sorts before
 * `file:<rid>0`) and before any later root's. Roots created after the first
 * page (a peer writing all along: new ids sort last) are not chased page
 * after page: they come with the changes after the head read then (the
 * lead's log), or by reconciliation.
 */
function rangeEnd (root: string): string {
  return root + '0'
}

function parseState (raw: string): CopyState | undefined {
  try {
    const o = JSON.parse(raw) as CopyState
    if (Array.isArray(o.bounds) && o.bounds.length > 0 && Number.isSafeInteger(o.at) && o.at >= 0 && o.at < o.bounds.length &&
      (o.end === undefined || typeof o.end === 'string')) return o
  } catch {
    // Unreadable: the store holds part of a range; peers' rounds reconcile the rest.
  }
  return undefined
}
