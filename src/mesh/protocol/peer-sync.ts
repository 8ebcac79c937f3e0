/**
 * Pull from one peer: a cursor into the peer's change log, kept in the
 * store's node-local keys (`mesh:cursor/<peer>`) and written after each page
 * is applied (at-least-once: applying a page twice changes nothing).
 *
 * A round first compares the whole range's fingerprints with the peer's
 * (one small request, reconcile.ts): equal, the cursor moves to the head the
 * peer read with them and nothing else is sent (the anti-entropy check).
 * Otherwise it asks for the changes after the cursor, page by page, until
 * the page reaches the head the peer reported (the fast path for a peer a
 * little behind). A check that finds the ranges different right after one
 * that did too means something the change logs cannot carry differs (a
 * store restored or compacted by an older version, a version signed with
 * two values): once the pull has caught up, that round reconciles, so no
 * difference between two connected peers survives two checks. When the
 * cursor is unusable (the peer answers `gap`: its log was trimmed past the
 * cursor, or the log is another one, the peer's store was replaced; or we
 * never synced with it), the round reconciles:
 * range-based set reconciliation moves only the keys either side lacks,
 * whatever either log still holds, then the changes after the head the
 * peer read at its first answer follow. A store with nothing in it yet
 * first takes the whole range, copied once for the node from all the peers
 * that serve it (range-copy.ts), then reconciles with each peer.
 *
 * What runs next is decided by the planner (sync-plan.ts: a phase, the
 * round's step, and pure functions of what the last step came to); this
 * file runs the steps and keeps the cursor.
 *
 * Pages are asked for one ahead: when a page says where the next begins,
 * the request for it goes out before the page in hand is applied, so the
 * peer reads and sends it meanwhile. The cursor moves only past pages
 * applied; a page asked for ahead and not taken is dropped with the round.
 *
 * A refused entry never holds the cursor back. One too far ahead of our
 * clock may become acceptable as time passes: it is kept aside ("parked",
 * in the cursor's own row, so the cursor never moves past an entry that was
 * neither applied nor kept) and tried again at the start of every round,
 * the newest version per key, at most `maxParkedBytes` (past that the ones
 * furthest ahead are dropped and counted). One that can never be accepted
 * (record grammar, sizes, a version of our own origin we never issued) is
 * dropped and counted; the rest of its page is applied.
 *
 * Every valid reply carries the peer's wall clock: with the request's round
 * trip it is a sample of our clock's offset to the peer (clock-guard.ts). A
 * refusal carries none: a peer is measured only once it delivers replies.
 */
import type { ChangesMessage, PullMessage, RequestMessage } from '../messages.js'
import type { MeshOptions } from './options.js'
import { CURSOR_PREFIX, parseState, park, withParked, type CursorState } from './cursor-state.js'
import { askPeer, type ReplyTo, type SentMark } from './peer-request.js'
import type { CopySource, RangeCopy } from './range-copy.js'
import { reconcile } from './reconcile.js'
import type { BulkPage, Cursor, MeshRuntime, PeerKey, RemoteEntry, ReplicaStore } from './runtime.js'
import type { Screened } from './screen.js'
import type { PeerCounters } from './status.js'
import { afterStep, firstStep, nextRoundDelay, queue, type Facts, type Happened, type Round, type SyncPhase } from './sync-plan.js'

export { CURSOR_PREFIX } from './cursor-state.js'

interface PeerSyncDeps {
  rt: MeshRuntime
  store: ReplicaStore
  opts: MeshOptions
  counters: PeerCounters
  /** `perEntry`: drop malformed entries one by one rather than refuse the lot. */
  screen: (entries: readonly RemoteEntry[], perEntry: boolean) => Screened
  /**
   * `bulk`: a page of a bulk transfer (a full resync's range), for the store's bulk path (ReplicaStore.applyBulk);
   * `ties`: a reconciliation's entries, whose ties the store decides by value (ReplicaStore.apply).
   */
  apply: (entries: RemoteEntry[], opts?: { bulk?: BulkPage, ties?: boolean }) => Promise<void>
  /** The clock sample of a reply: when its request left, and the peer's wall clock in it. */
  mark: () => SentMark
  clockSample: (peer: PeerKey, sent: SentMark, peerWall: number) => void
  /** Tracks store writes so a driver can tell when the core is idle. */
  track: <T>(p: Promise<T>) => Promise<T>
  /** The node's copy of the whole range, which every peer's sync serves while it runs. */
  copy: RangeCopy
  log: (msg: string, fields?: Record<string, unknown>) => void
}

export class PeerSync {
  /** Where the sync stands (sync-plan.ts): offline, waiting for its next round, running one, or stopped. */
  private phase: SyncPhase = { at: 'offline' }
  /** Checks in a row, over rounds, that found the ranges different (reset by an equal check, a reconciliation, a disconnect). */
  private differing = 0
  /** True until a pull from this peer reaches the head it reported (the lag shown on the status). */
  behind = true
  lastSyncAt: number | null = null
  /** When a pull from this peer last reached the head it reported (runtime ms), or null. */
  caughtUpAt: number | null = null
  /** When this peer was first seen (runtime ms): the lag of a peer never caught up counts from here. */
  readonly since: number
  private state: CursorState | undefined
  /** Counts connections: rounds of an earlier one stop at their next step. */
  private generation = 0
  /** The peer's busy hint at the last round's end: when the next round runs. */
  private retryAfterMs = 0
  private running: Promise<void> | undefined
  private cancelTimer: (() => void) | undefined
  /**
   * The next page, asked for before the page in hand is applied, so the
   * peer reads and sends it meanwhile: where it starts (the request's
   * position) and the reply to come.
   */
  private ahead: { at: string, reply: Promise<ChangesMessage | undefined> } | undefined

  constructor (readonly peer: PeerKey, private readonly d: PeerSyncDeps) {
    this.since = d.rt.now()
  }

  get connected (): boolean {
    return this.phase.at === 'waiting' || this.phase.at === 'running'
  }

  /** True while a reconciliation with this peer runs. */
  get reconciling (): boolean {
    return this.phase.at === 'running' && this.phase.round.step === 'reconcile'
  }

  /**
   * Catch-up lag at `now`: 0 when the last pull reached the peer's head,
   * else how long since it last did (or since the peer was first seen). It
   * grows while a backlog or a resync is being pulled, or while pulls fail.
   */
  lagMs (now: number): number {
    return this.behind ? Math.max(0, now - (this.caughtUpAt ?? this.since)) : 0
  }

  get cursor (): Cursor | null {
    return this.load().cursor
  }

  /** The peer is reconciling with us while we reconcile with it: ours gives way to theirs. */
  yieldReconciliation (): void {
    if (this.phase.at === 'running' && this.phase.round.step === 'reconcile') this.phase.round.yielded = true
  }

  /** The node's copy of the range is under way, or will be at this peer's next round (never synced, and our store holds nothing). */
  get resyncing (): boolean {
    return this.load().log === null && this.copyDue()
  }

  /** Never synced with: while the node copies the range, this peer's rounds serve the copy (its pulls would bring it its own records back). */
  get copyPeer (): boolean {
    return this.load().log === null
  }

  /** The peer connected: it waits for a round (the core starts one at once). */
  connect (): void {
    if (this.phase.at === 'offline') this.phase = { at: 'waiting' }
  }

  /**
   * Runs a round now (or once more after the running one); resolves when
   * the rounds end. `urgent`: we know we are behind (a missed push frame),
   * so the round goes straight to the pull.
   */
  async sync (urgent = false): Promise<void> {
    const p = this.phase
    if (p.at === 'running') {
      p.queued = queue(p.queued, urgent)
      return await this.running
    }
    if (p.at !== 'waiting') return
    if (this.running !== undefined) {
      // A round from before the peer left and came back is still winding down: this one follows it.
      await this.running
      return await this.sync(urgent)
    }
    this.cancelTimer?.()
    this.cancelTimer = undefined
    this.running = this.rounds(urgent, this.generation).finally(() => {
      this.running = undefined
      this.scheduleNext()
    })
    return await this.running
  }

  disconnect (): void {
    this.generation++
    if (this.phase.at !== 'stopped') this.phase = { at: 'offline' }
    this.differing = 0
    this.d.copy.leave(this.peer)
    this.cancelTimer?.()
    this.cancelTimer = undefined
  }

  stop (): void {
    this.disconnect()
    this.phase = { at: 'stopped' }
  }

  /** Entries kept aside from this peer's pages, waiting for our clock. */
  get parked (): number {
    return this.load().parked?.length ?? 0
  }

  /**
   * Rounds one after the other while calls queue them (sync-plan.ts
   * `queue`), each from its first step to its end. `gen`: the connection
   * they run for; a disconnect ends them at their next step.
   */
  private async rounds (urgent: boolean, gen: number): Promise<void> {
    const live = (): boolean => gen === this.generation
    for (let next: boolean | undefined = urgent; next !== undefined && live();) {
      // Only when there is something to retry: a round's first request otherwise leaves in the same turn.
      if (this.parked > 0) await this.retryParked()
      if (!live()) return
      let round: Round = firstStep(next, this.differing, this.facts())
      this.phase = { at: 'running', round, queued: 'none' }
      try {
        for (;;) {
          const happened = await this.run(round, live)
          if (!live() || this.phase.at !== 'running') return
          round = this.phase.round
          const n = afterStep(round, happened, this.facts(), this.d.opts.maxPagesPerRound)
          if ('end' in n) { this.differing = n.differing; break }
          round = n.round
          this.phase = { ...this.phase, round }
        }
      } finally {
        // A page asked for ahead and not taken is dropped with the round (its reply, when it comes, is not applied).
        this.ahead = undefined
      }
      const queued = this.phase.queued
      this.retryAfterMs = round.retryAfterMs
      this.phase = { at: 'waiting' }
      next = queued === 'none' ? undefined : queued === 'urgent'
    }
  }

  private scheduleNext (): void {
    if (this.phase.at !== 'waiting') return
    // A round the peer refused busy is asked again when it said (its hint), not a whole anti-entropy interval later.
    const delay = nextRoundDelay(this.retryAfterMs, this.d.opts.antiEntropyMs, this.d.rt.random())
    this.retryAfterMs = 0
    this.cancelTimer?.()
    this.cancelTimer = this.d.rt.schedule(delay, () => {
      this.cancelTimer = undefined
      this.sync().catch((err: unknown) => { this.d.log('pull round failed', { peer: this.peer, err }) }) // the next tick retries
    })
  }

  private facts (): Facts {
    return { cursor: this.load().log !== null, copyDue: this.copyDue() }
  }

  private copyDue (): boolean {
    return this.d.copy.active || this.d.store.digest().keys === 0
  }

  /** Runs the round's step: what it came to. `live`: false once the connection the round runs for is gone. */
  private async run (round: Round, live: () => boolean): Promise<Happened> {
    switch (round.step) {
      case 'check': return await this.checkStep(this.load())
      case 'pull': return await this.changesStep(this.load(), live)
      case 'copy': return await this.copyStep()
      case 'reconcile': return await this.reconcileStep(this.load(), live)
    }
  }

  /** This peer serves the node's copy of the range (range-copy.ts) until it is in or this peer cannot go on. */
  private async copyStep (): Promise<Happened> {
    const out = await this.d.copy.help(this.copySource())
    // The peer that served the whole copy continues from its log's head at the first page; the others reconcile.
    if (out.cursor !== undefined) await this.save(withParked({ log: out.cursor.log, cursor: out.cursor.head }, this.load().parked))
    return out.done ? { step: 'copy', done: true } : { failed: true }
  }

  /** This peer as a server of the node's copy of the range: its requests, its screen, its counters. */
  private copySource (): CopySource {
    return {
      peer: this.peer,
      usable: () => this.connected,
      ask: async (req) => await this.ask(req),
      applyPage: async (entries, bulk) => {
        const s = this.load()
        const parked = await this.applyPage(entries, s.parked, bulk)
        if (parked !== s.parked) await this.save(withParked({ ...s }, parked))
        this.lastSyncAt = this.d.rt.now()
        this.behind = true
      },
      started: () => { this.d.counters.resyncs++ }
    }
  }

  /** The page a step needs: the one asked for ahead when it starts where this one does, else asked for now. */
  private async page (req: PullMessage): Promise<ChangesMessage | undefined> {
    const a = this.ahead
    this.ahead = undefined
    // A request ahead that failed or was refused is counted and logged by ask(), and ends the step as a failed request now would.
    if (a !== undefined && a.at === positionOf(req)) return await a.reply
    return await this.ask(req)
  }

  private async changesStep (s: CursorState, live: () => boolean): Promise<Happened> {
    const reply = await this.page({ t: 'pull', log: s.log, cursor: s.cursor, maxBytes: this.d.opts.pageBytes })
    if (reply === undefined || !live()) return { failed: true }
    // More to come from where this page ends: ask for it now; the peer prepares it while this one is applied.
    if (!reply.gap && reply.next !== null && reply.next !== reply.head && reply.next !== s.cursor) {
      const req: PullMessage = { t: 'pull', log: reply.log, cursor: reply.next, maxBytes: this.d.opts.pageBytes }
      this.ahead = { at: positionOf(req), reply: this.ask(req) }
    }
    if (reply.gap) {
      this.d.log('peer cannot serve our cursor: reconciling', { peer: this.peer, cursor: s.cursor })
      return { step: 'pull', gap: true }
    }
    const parked = await this.applyPage(reply.entries, s.parked)
    const before = s.cursor
    if ((reply.next !== null && reply.next !== before) || parked !== s.parked) await this.save(withParked({ log: reply.log, cursor: reply.next ?? before },
      parked))
    this.lastSyncAt = this.d.rt.now()
    this.behind = reply.next !== reply.head
    if (!this.behind) this.caughtUpAt = this.lastSyncAt
    // A page that moved nothing ends the round: the peer's log has nothing more for us (or is misbehaving).
    return { step: 'pull', gap: false, caughtUp: !this.behind, moved: reply.next !== before }
  }

  /**
   * The anti-entropy check: the whole range's fingerprint against the
   * peer's. Equal: we hold everything the peer held at the head it read with
   * it, so the cursor moves there and the round ends with nothing else sent.
   */
  private async checkStep (s: CursorState): Promise<Happened> {
    const top = this.d.store.rangeFingerprint('')
    const reply = await this.ask({ t: 'recon', ranges: [{ p: '', fp: top.fp, n: top.roots }] })
    if (reply === undefined) return { failed: true }
    if (reply.ranges.length > 0 || reply.diff.length > 0 || reply.taken !== 1) return { step: 'check', equal: false }
    this.d.counters.reconcilesEqual++
    if (reply.head !== null && (reply.log !== s.log || reply.head !== s.cursor)) await this.save(withParked({ log: reply.log, cursor: reply.head }, s.parked))
    this.lastSyncAt = this.d.rt.now()
    this.behind = false
    this.caughtUpAt = this.lastSyncAt
    return { step: 'check', equal: true }
  }

  /**
   * Range-based set reconciliation with the peer (reconcile.ts), where our
   * cursor cannot serve: only the keys either side lacks move, and the
   * cursor continues from the head the peer read at its first answer.
   */
  private async reconcileStep (s: CursorState, live: () => boolean): Promise<Happened> {
    let parked = s.parked
    const outcome = await reconcile(this.d.store, {
      ask: async (m) => await this.ask(m),
      apply: async (entries) => { parked = await this.applyPage(entries, parked, undefined, true) },
      alive: () => live() && this.phase.at === 'running' && !this.phase.round.yielded,
      // A peer whose claim a copy did not bear out is not taken at its word again (range-copy.ts).
      copyInstead: s.log === null && this.d.copy.believes(this.peer)
    })
    if (outcome === undefined) {
      if (parked !== s.parked) await this.save(withParked({ ...s }, parked))
      return { failed: true }
    }
    if (outcome.copy !== undefined) {
      // The node's copy of the range, from every peer at once (range-copy.ts): this round's next step joins it.
      this.d.log('peer holds far more than this node: copying the range', { peer: this.peer, roots: outcome.copy.roots, ours: outcome.copy.ours })
      await this.d.copy.adopt({ why: `peer ${this.peer} said it holds ${outcome.copy.roots} roots against this node's ${outcome.copy.ours}`, claim: { peer: this.peer, ...outcome.copy } })
      return { step: 'reconcile', equal: false, copy: true }
    }
    if (outcome.equal) this.d.counters.reconcilesEqual++
    else this.d.counters.reconciles++
    this.d.counters.reconKeysIn += outcome.keysIn
    this.d.counters.reconKeysOut += outcome.keysOut
    this.d.log('reconciled with peer', { peer: this.peer, rounds: outcome.rounds, roots: outcome.roots, keysIn: outcome.keysIn, keysOut: outcome.keysOut })
    this.lastSyncAt = this.d.rt.now()
    await this.save(withParked({ log: outcome.log, cursor: outcome.head }, parked))
    // Equal ranges: we hold everything up to the head the peer read with its fingerprints.
    this.behind = !outcome.equal
    if (outcome.equal) this.caughtUpAt = this.lastSyncAt
    return { step: 'reconcile', equal: outcome.equal, copy: false }
  }

  /** Tries the parked entries again: those our clock now accepts are applied, the rest stay. */
  private async retryParked (): Promise<void> {
    const s = this.load()
    if (s.parked === undefined || s.parked.length === 0) return
    const screened = this.d.screen(s.parked, true)
    if ('bad' in screened) return // not reached: a page's screen drops entries one by one
    if (screened.drifted.length === s.parked.length) return
    if (screened.ok.length > 0) await this.d.apply(screened.ok)
    this.d.counters.entriesDropped += screened.dropped
    this.d.counters.forged += screened.forged
    await this.save(withParked({ ...s }, screened.drifted))
  }

  /**
   * Screens and applies a page: returns the parked entries to keep with the
   * cursor (`parked` itself when unchanged; undefined: none).
   */
  private async applyPage (entries: RemoteEntry[], parked: RemoteEntry[] | undefined, bulk?: BulkPage, ties = false): Promise<RemoteEntry[] | undefined> {
    const screened = this.d.screen(entries, true)
    if ('bad' in screened) return parked // not reached: a page's screen drops entries one by one
    if (screened.dropped > 0) {
      this.d.counters.entriesDropped += screened.dropped
      this.d.log('dropped malformed entries from peer', { peer: this.peer, entries: screened.dropped })
    }
    if (screened.forged > 0) {
      this.d.counters.forged += screened.forged
      this.d.log('dropped entries claiming our origin with versions we never issued', { peer: this.peer, entries: screened.forged })
    }
    // A bulk transfer's last page is applied even when empty: it ends the transfer.
    if (screened.ok.length > 0 || bulk?.done === true) await this.d.apply(screened.ok, { ...(bulk === undefined ? {} : { bulk }), ties })
    if (screened.drifted.length === 0) return parked
    this.d.counters.driftRefusals += screened.drifted.length
    return this.park(parked ?? [], screened.drifted)
  }

  /** The newest version per key of both lists, within `maxParkedBytes` (cursor-state.ts `park`). */
  private park (held: readonly RemoteEntry[], more: readonly RemoteEntry[]): RemoteEntry[] {
    const { kept, dropped } = park(held, more, this.d.opts.maxParkedBytes)
    if (dropped > 0) {
      this.d.counters.entriesDropped += dropped
      this.d.log('too many refused entries kept aside: dropped the furthest ahead', { peer: this.peer, dropped })
    }
    return kept
  }

  /** A request to the peer (peer-request.ts): undefined when it failed or was refused; a busy refusal's hint times the next round. */
  private async ask<R extends RequestMessage> (req: R): Promise<ReplyTo<R> | undefined> {
    const r = await askPeer(this.d, this.peer, req)
    if ('reply' in r) return r.reply
    if ('refused' in r && r.refused.code === 'busy' && this.phase.at === 'running') this.phase.round.retryAfterMs = r.refused.retryAfterMs ?? 0
    return undefined
  }

  private load (): CursorState {
    if (this.state === undefined) {
      const raw = this.d.store.getLocal(CURSOR_PREFIX + this.peer)
      this.state = parseState(raw)
    }
    return this.state
  }

  private async save (s: CursorState): Promise<void> {
    // After stop the store may be closing; an unsaved cursor only means a page is pulled again.
    if (this.phase.at === 'stopped') return
    this.state = s
    await this.d.track(this.d.store.setLocal(CURSOR_PREFIX + this.peer, JSON.stringify(s)))
  }
}

/** Where a page request starts (its log and cursor): a page asked for ahead is taken by the request for the same place. */
const positionOf = (req: PullMessage): string => `${req.log ?? ''} ${req.cursor ?? ''}`
