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

type Step = 'more' | 'done' | 'stop' | 'reconcile' | 'copy'

export class PeerSync {
  connected = false
  behind = true
  lastSyncAt: number | null = null
  /** When a pull from this peer last reached the head it reported (runtime ms), or null. */
  caughtUpAt: number | null = null
  /** When this peer was first seen (runtime ms): the lag of a peer never caught up counts from here. */
  readonly since: number
  private state: CursorState | undefined
  private running: Promise<void> | undefined
  private again = false
  /** The next round skips the fingerprint check (we know we are behind: a push frame was missed). */
  private urgent = false
  /** True while a reconciliation with this peer runs. */
  reconciling = false
  /** The peer's own reconciliation with us runs and moves keys both ways: ours stops (the next round checks again). */
  private yielded = false
  /** The peer refused a reconciliation request as one it does not know (an older version): it gets full resyncs, as before. */
  private noRecon = false
  /** Checks in a row that found the ranges different: at the second, the round reconciles once its pull has caught up. */
  private differingChecks = 0
  private cancelTimer: (() => void) | undefined
  private retryAfterMs = 0
  private stopped = false
  /**
   * The next page, asked for before the page in hand is applied, so the
   * peer reads and sends it meanwhile: where it starts (the request's
   * position) and the reply to come.
   */
  private ahead: { at: string, reply: Promise<ChangesMessage | undefined> } | undefined

  constructor (readonly peer: PeerKey, private readonly d: PeerSyncDeps) {
    this.since = d.rt.now()
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

  /** This peer serves the node's copy of the range now (range-copy.ts). */
  get copying (): boolean {
    return this.d.copy.serving(this.peer)
  }

  /** The peer is reconciling with us while we reconcile with it: ours gives way to theirs. */
  yieldReconciliation (): void {
    if (this.reconciling) this.yielded = true
  }

  /** The node's copy of the range is under way, or will be at this peer's next round (never synced, and our store holds nothing). */
  get resyncing (): boolean {
    return this.load().log === null && (this.d.copy.active || this.d.store.digest().keys === 0)
  }

  /** Never synced with: while the node copies the range, this peer's rounds serve the copy (its pulls would bring it its own records back). */
  get copyPeer (): boolean {
    return this.load().log === null
  }

  /**
   * Runs a round now (or once more after the running one); resolves when
   * the rounds end. `urgent`: we know we are behind (a missed push frame),
   * so the round goes straight to the pull.
   */
  async sync (urgent = false): Promise<void> {
    if (this.stopped || !this.connected) return
    if (urgent) this.urgent = true
    if (this.running !== undefined) {
      this.again = true
      return await this.running
    }
    this.cancelTimer?.()
    this.cancelTimer = undefined
    this.running = (async () => {
      do {
        this.again = false
        await this.round()
      } while (this.again && this.connected && !this.stopped)
    })().finally(() => {
      this.running = undefined
      this.scheduleNext()
    })
    return await this.running
  }

  disconnect (): void {
    this.connected = false
    this.differingChecks = 0
    this.d.copy.leave(this.peer)
    this.cancelTimer?.()
    this.cancelTimer = undefined
  }

  stop (): void {
    this.stopped = true
    this.disconnect()
  }

  private scheduleNext (): void {
    if (this.stopped || !this.connected) return
    // A round the peer refused busy is asked again when it said (its hint), not a whole anti-entropy interval later.
    const delay = this.retryAfterMs > 0
      ? Math.round(this.retryAfterMs * (1 + 0.2 * this.d.rt.random()))
      : Math.round(this.d.opts.antiEntropyMs * (0.75 + 0.5 * this.d.rt.random()))
    this.retryAfterMs = 0
    this.cancelTimer?.()
    this.cancelTimer = this.d.rt.schedule(delay, () => {
      this.cancelTimer = undefined
      this.sync().catch((err: unknown) => { this.d.log('pull round failed', { peer: this.peer, err }) }) // the next tick retries
    })
  }

  /** Entries kept aside from this peer's pages, waiting for our clock. */
  get parked (): number {
    return this.load().parked?.length ?? 0
  }

  private async round (): Promise<void> {
    try {
      // Only when there is something to retry: a round's first request otherwise leaves in the same turn.
      if (this.parked > 0) await this.retryParked()
      const urgent = this.urgent
      this.urgent = false
      let first = this.load()
      if (first.snap !== undefined) {
        // An older version's resync from this peer: the node's copy continues from its position.
        await this.d.copy.adopt(first.snap.after, { why: 'a full resync an older version had under way', ...(first.snap.log === null ? {} : { lead: { peer: this.peer, log: first.snap.log, head: first.snap.head } }) })
        await this.save(withParked({ log: first.log, cursor: first.cursor }, first.parked))
        first = this.load()
      }
      let repair = false
      if (!urgent && !this.noRecon && first.log !== null) {
        if (await this.checkStep(first) !== 'more') return
        repair = ++this.differingChecks >= 2
      }
      let reconciled = false
      let copied = false
      for (let pages = 0; pages < this.d.opts.maxPagesPerRound; pages++) {
        if (this.stopped || !this.connected) return
        const s = this.load()
        let step: Step
        // Once a round: a copy that ended with nothing in the store (the peers hold nothing) goes on to reconcile.
        if (!copied && s.log === null && (this.d.copy.active || this.d.store.digest().keys === 0)) step = 'copy'
        else if (s.log === null) step = 'reconcile'
        else step = await this.changesStep(s)
        // Caught up, and still different after the last check too: what differs is not in the log.
        if (step === 'done' && repair && !reconciled && !this.behind) {
          this.d.log('ranges still differ after the pull caught up: reconciling', { peer: this.peer })
          step = 'reconcile'
        }
        if (step === 'copy') {
          copied = true
          const out = await this.d.copy.help(this.copySource())
          // The peer that served the whole copy continues from its log's head at the first page; the others reconcile.
          if (out.cursor !== undefined) await this.save(withParked({ log: out.cursor.log, cursor: out.cursor.head }, this.load().parked))
          step = out.done ? 'more' : 'stop'
        }
        if (step === 'reconcile') {
          // Once a round: a gap right after a reconciliation (the peer trimmed its log again meanwhile) waits for the next round.
          if (reconciled) return
          reconciled = true
          step = this.noRecon ? await this.startResync() : await this.reconcileStep(this.load())
        }
        if (step !== 'more') return
      }
    } finally {
      // A page asked for ahead and not taken is dropped with the round (its reply, when it comes, is not applied).
      this.ahead = undefined
    }
  }

  /** This peer as a server of the node's copy of the range: its requests, its screen, its counters. */
  private copySource (): CopySource {
    return {
      peer: this.peer,
      usable: () => this.connected && !this.stopped,
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

  /** Asks for a page now, to be taken by the step that needs it (page()). */
  private askAhead (req: PullMessage): void {
    if (this.stopped || !this.connected) return
    this.ahead = { at: positionOf(req), reply: this.ask(req) }
  }

  private async changesStep (s: CursorState): Promise<Step> {
    const reply = await this.page({ t: 'pull', log: s.log, cursor: s.cursor, maxBytes: this.d.opts.pageBytes })
    if (reply === undefined || this.stopped) return 'stop'
    // More to come from where this page ends: ask for it now; the peer prepares it while this one is applied.
    if (!reply.gap && reply.next !== null && reply.next !== reply.head && reply.next !== s.cursor) {
      this.askAhead({ t: 'pull', log: reply.log, cursor: reply.next, maxBytes: this.d.opts.pageBytes })
    }
    if (reply.gap) {
      this.d.log('peer cannot serve our cursor: reconciling', { peer: this.peer, cursor: s.cursor })
      return 'reconcile'
    }
    const parked = await this.applyPage(reply.entries, s.parked)
    const before = s.cursor
    if ((reply.next !== null && reply.next !== before) || parked !== s.parked) await this.save(withParked({ log: reply.log, cursor: reply.next ?? before }, parked))
    this.lastSyncAt = this.d.rt.now()
    this.behind = reply.next !== reply.head
    if (!this.behind) this.caughtUpAt = this.lastSyncAt
    // A page that moved nothing ends the round: the peer's log has nothing more for us (or is misbehaving).
    return this.behind && reply.next !== before ? 'more' : 'done'
  }

  /**
   * The anti-entropy check: the whole range's fingerprint against the
   * peer's. Equal: we hold everything the peer held at the head it read with
   * it, so the cursor moves there and the round ends with nothing else sent.
   */
  private async checkStep (s: CursorState): Promise<Step> {
    const top = this.d.store.rangeFingerprint('')
    const reply = await this.ask({ t: 'recon', ranges: [{ p: '', fp: top.fp, n: top.roots }] })
    if (reply === undefined) return 'stop'
    if (reply.ranges.length > 0 || reply.diff.length > 0 || reply.taken !== 1) return 'more'
    this.differingChecks = 0
    this.d.counters.reconcilesEqual++
    if (reply.head !== null && (reply.log !== s.log || reply.head !== s.cursor)) await this.save(withParked({ log: reply.log, cursor: reply.head }, s.parked))
    this.lastSyncAt = this.d.rt.now()
    this.behind = false
    this.caughtUpAt = this.lastSyncAt
    return 'done'
  }

  /**
   * Range-based set reconciliation with the peer (reconcile.ts), where our
   * cursor cannot serve: only the keys either side lacks move, and the
   * cursor continues from the head the peer read at its first answer.
   */
  private async reconcileStep (s: CursorState): Promise<Step> {
    this.reconciling = true
    this.yielded = false
    let parked = s.parked
    try {
      const outcome = await reconcile(this.d.store, {
        ask: async (m) => await this.ask(m),
        apply: async (entries) => { parked = await this.applyPage(entries, parked, undefined, true) },
        alive: () => !this.stopped && this.connected && !this.yielded,
        // A peer whose claim a copy did not bear out is not taken at its word again (range-copy.ts).
        copyInstead: s.log === null && this.d.copy.believes(this.peer)
      })
      if (outcome === undefined) {
        if (parked !== s.parked) await this.save(withParked({ ...s }, parked))
        // A peer that does not know reconciliation (an older version) gets the full resync it always had.
        return this.noRecon ? await this.startResync() : 'stop'
      }
      if (outcome.copy !== undefined) {
        // The node's copy of the range, from every peer at once (range-copy.ts): this round's next step joins it.
        this.d.log('peer holds far more than this node: copying the range', { peer: this.peer, roots: outcome.copy.roots, ours: outcome.copy.ours })
        await this.d.copy.adopt(null, { why: `peer ${this.peer} said it holds ${outcome.copy.roots} roots against this node's ${outcome.copy.ours}`, claim: { peer: this.peer, ...outcome.copy } })
        return 'more'
      }
      if (outcome.equal) this.d.counters.reconcilesEqual++
      else this.d.counters.reconciles++
      this.differingChecks = 0
      this.d.counters.reconKeysIn += outcome.keysIn
      this.d.counters.reconKeysOut += outcome.keysOut
      this.d.log('reconciled with peer', { peer: this.peer, rounds: outcome.rounds, roots: outcome.roots, keysIn: outcome.keysIn, keysOut: outcome.keysOut })
      this.lastSyncAt = this.d.rt.now()
      await this.save(withParked({ log: outcome.log, cursor: outcome.head }, parked))
      // Equal ranges: we hold everything up to the head the peer read with its fingerprints.
      this.behind = !outcome.equal
      if (outcome.equal) this.caughtUpAt = this.lastSyncAt
      return outcome.equal ? 'done' : 'more'
    } finally {
      this.reconciling = false
    }
  }

  /** A peer that does not reconcile (an older version): the node copies the whole range again, from the next step. */
  private async startResync (): Promise<Step> {
    this.d.log('peer does not reconcile: full resync', { peer: this.peer })
    await this.d.copy.adopt(null, { why: `peer ${this.peer} does not reconcile (an older version)` })
    return 'more'
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
    if ('refused' in r && r.refused.code === 'busy') this.retryAfterMs = r.refused.retryAfterMs ?? 0
    if ('refused' in r && r.refused.code === 'bad-request' && req.t === 'recon') this.noRecon = true
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
    if (this.stopped) return
    this.state = s
    await this.d.track(this.d.store.setLocal(CURSOR_PREFIX + this.peer, JSON.stringify(s)))
  }
}

/** Where a page request starts (its log and cursor): a page asked for ahead is taken by the request for the same place. */
const positionOf = (req: PullMessage): string => `${req.log ?? ''} ${req.cursor ?? ''}`
