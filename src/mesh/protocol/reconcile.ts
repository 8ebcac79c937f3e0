/**
 * Range-based set reconciliation between two replicas, after Negentropy
 * (hoytech/negentropy): the bytes exchanged grow with the difference, not
 * with the store, and nothing depends on how long either change log is kept.
 *
 * Items are roots. A root's position is the first 32 bits of SHA-256 of its
 * id; its hash covers its folded versions and its values (the record
 * layer's fingerprints.ts, kept up to date as changes commit). A range is
 * the roots whose position starts with a hex prefix ("" is everything, 8
 * digits one position); its fingerprint sums their hashes, with their count.
 *
 * 1. Ranges. The initiator sends the fingerprint of the whole range. The
 *    side that receives a fingerprint compares it with its own for that
 *    range: equal, nothing more is said of it; different, it answers with
 *    the list of its roots there (id and 64 bits of hash) when it holds at
 *    most `LEAF_ROOTS` of them, else with the fingerprints of the range's 16
 *    sub-ranges. The side that receives a list compares it with its own
 *    roots there and knows which differ (missing on one side, or another
 *    hash); the responder tells them back (`diff`), or, holding more than
 *    `LIST_MAX_ROOTS` there, splits instead. Both sides run the same rule, so
 *    each message goes one level deeper where ranges differ, and equal
 *    stores exchange one fingerprint each way.
 * 2. Keys. For the roots found to differ, the initiator sends its versions
 *    of their keys (no values); the responder answers with its entries those
 *    versions do not cover (a key the initiator lacks or holds older, a
 *    newer root tombstone) and the keys it wants; the initiator applies the
 *    first and gives the second. Exactly the keys one side lacks travel,
 *    each once, as the pull's entries do. A root found to differ whose
 *    versions are the same on both sides holds another value at an equal
 *    version somewhere (a member signed two values with one version): the
 *    root's keys then travel both ways, and each side keeps the tie's winner
 *    (records' versions.ts), so the two end equal. Both sides apply what a
 *    reconciliation brings deciding ties by value (`ReplicaStore.apply`'s
 *    `ties`).
 *
 * The responder keeps no state between messages: each reply carries what it
 * answered (`taken`), and the initiator sends the rest again. Each reply also
 * carries the responder's log id and head, read before its fingerprints:
 * once reconciled, the initiator holds everything the responder held at
 * the first reply's head, which is where its cursor continues from.
 *
 * Pure: reads through the ReplicaStore, talks through the `ask` it is given.
 * The key comparison's responder side is in reconcile-keys.ts.
 */
import type { Message, ReconMessage, ReconRange, ReconReplyMessage, RequestMessage } from '../messages.js'
import { entryWeight, MAX_RECON_RANGES, MAX_RECON_ROOTS } from '../messages.js'
import { copyRather, type CopyClaim } from './copy-claim.js'
import { byRootOf, ridOf } from './reconcile-keys.js'
import type { RemoteEntry, ReplicaStore } from './runtime.js'

/** A side holding at most this many roots in a differing range lists them rather than split it. */
const LEAF_ROOTS = 16
/** A responder sent a list answers with the roots that differ when it holds at most this many there; past it, it splits the range. */
const LIST_MAX_ROOTS = 64
/** Hex digits of a root's hash in a list (64 bits). */
const ITEM_HASH_DIGITS = 16
const POSITION_DIGITS = 8
const HEX = '0123456789abcdef'
/** About what a range adds to a message as JSON: a fingerprint, and a listed root. */
const FP_RANGE_BYTES = 48
const ITEM_BYTES = 48
/** Roots found to differ before their keys are compared (the range walk pauses meanwhile). */
const EXCHANGE_ROOTS = 1_024

export interface ReconcileLimits {
  /** About how many bytes of JSON a reconciliation message may take (requests and replies). */
  messageBytes: number
  /** About how many bytes of keys and values a `roots` exchange or a `give` carries. */
  entryBytes: number
}

export const DEFAULT_RECONCILE_LIMITS: Readonly<ReconcileLimits> = { messageBytes: 256 * 1024, entryBytes: 512 * 1024 }

// ------------------------------------------------------------------ ranges

function children (p: string): string[] {
  return [...HEX].map(d => p + d)
}

/** What one side says of a range it found different: its list of roots, or its sub-ranges' fingerprints. */
function splitOrList (store: ReplicaStore, p: string, roots: number, maxListed: number): ReconRange[] {
  if (roots <= maxListed || p.length >= POSITION_DIGITS) {
    return [{ p, items: store.rangeRoots(p, Infinity).map(r => [r.rid, r.hash.slice(0, ITEM_HASH_DIGITS)]) }]
  }
  return children(p).map(c => {
    const f = store.rangeFingerprint(c)
    return { p: c, fp: f.fp, n: f.roots }
  })
}

/** The roots of `p` that are not the same on both sides: those one side lacks and those whose hashes differ. */
function diffItems (store: ReplicaStore, p: string, theirs: ReadonlyArray<[string, string]>): string[] {
  const mine = new Map(store.rangeRoots(p, Infinity).map(r => [r.rid, r.hash.slice(0, ITEM_HASH_DIGITS)]))
  const out: string[] = []
  for (const [rid, h] of theirs) {
    if (mine.get(rid) !== h) out.push(rid)
    mine.delete(rid)
  }
  for (const rid of mine.keys()) out.push(rid)
  return out
}

function rangeBytes (r: ReconRange): number {
  return 'fp' in r ? FP_RANGE_BYTES : 16 + r.items.length * ITEM_BYTES
}

/** The responder: answers a request's ranges in order, as many as fit its reply. */
export function answerRecon (store: ReplicaStore, m: ReconMessage,
  limits: ReconcileLimits = DEFAULT_RECONCILE_LIMITS): { ranges: ReconRange[], diff: string[], taken: number } {
  const ranges: ReconRange[] = []
  const diff: string[] = []
  let bytes = 0
  let listed = 0
  let taken = 0
  for (const r of m.ranges) {
    if (taken > 0 && bytes >= limits.messageBytes) break
    const mine = store.rangeFingerprint(r.p)
    let out: ReconRange[] = []
    let found: string[] = []
    if ('fp' in r) {
      if (mine.fp !== r.fp || mine.roots !== r.n) out = splitOrList(store, r.p, mine.roots, LEAF_ROOTS)
    } else if (mine.roots > LIST_MAX_ROOTS && r.p.length < POSITION_DIGITS) {
      out = splitOrList(store, r.p, mine.roots, LEAF_ROOTS)
    } else {
      found = diffItems(store, r.p, r.items)
    }
    const add = out.reduce((n, x) => n + rangeBytes(x), 0) + found.length * 32
    const roots = out.reduce((n, x) => n + ('items' in x ? x.items.length : 0), 0) + found.length
    if (taken > 0 && (ranges.length + out.length > MAX_RECON_RANGES || listed + roots > MAX_RECON_ROOTS || bytes + add > 2 * limits.messageBytes)) break
    ranges.push(...out)
    diff.push(...found)
    bytes += add
    listed += roots
    taken++
  }
  return { ranges, diff, taken }
}

/**
 * The initiator's side of the range walk: the ranges still to send, and the
 * roots found to differ. `next` builds a request, `take` reads its reply.
 */
class RangeWalk {
  private queue: ReconRange[]
  private sent: ReconRange[] = []
  /** Roots found to differ and not yet handed out by `takeDiffering`. */
  private readonly differing = new Set<string>()
  /** Every root found to differ, over the whole walk. */
  found = 0
  rounds = 0

  constructor (private readonly store: ReplicaStore, private readonly limits: ReconcileLimits = DEFAULT_RECONCILE_LIMITS) {
    const top = store.rangeFingerprint('')
    this.queue = [{ p: '', fp: top.fp, n: top.roots }]
  }

  get done (): boolean {
    return this.queue.length === 0
  }

  get pendingRoots (): number {
    return this.differing.size
  }

  /** The next request, or undefined when no range is left to send. */
  next (): ReconMessage | undefined {
    if (this.queue.length === 0) return undefined
    let bytes = 0
    let roots = 0
    let n = 0
    while (n < this.queue.length && n < MAX_RECON_RANGES) {
      const r = this.queue[n]
      const items = 'items' in r ? r.items.length : 0
      if (n > 0 && (bytes + rangeBytes(r) > this.limits.messageBytes || roots + items > MAX_RECON_ROOTS)) break
      bytes += rangeBytes(r)
      roots += items
      n++
    }
    this.sent = this.queue.slice(0, n)
    this.queue = this.queue.slice(n)
    this.rounds++
    return { t: 'recon', ranges: this.sent }
  }

  /** Reads the reply to the last request. */
  take (reply: ReconReplyMessage): void {
    const taken = Math.min(Math.max(reply.taken, 0), this.sent.length)
    // A reply that answered nothing would loop for ever: treat it as answering the first range (its answer is lost, the pass after finds it).
    const back = this.sent.slice(Math.max(taken, 1))
    this.queue = [...back, ...this.queue]
    this.sent = []
    const more: ReconRange[] = []
    for (const r of reply.ranges) {
      if ('fp' in r) {
        const mine = this.store.rangeFingerprint(r.p)
        if (mine.fp !== r.fp || mine.roots !== r.n) more.push(...splitOrList(this.store, r.p, mine.roots, LEAF_ROOTS))
      } else {
        for (const rid of diffItems(this.store, r.p, r.items)) this.differ(rid)
      }
    }
    for (const rid of reply.diff) this.differ(rid)
    this.queue.push(...more)
  }

  /** Hands out (and forgets) up to `max` of the roots found to differ. */
  takeDiffering (max: number): string[] {
    const out: string[] = []
    for (const rid of this.differing) {
      if (out.length >= max) break
      out.push(rid)
    }
    for (const rid of out) this.differing.delete(rid)
    return out
  }

  private differ (rid: string): void {
    if (!this.differing.has(rid)) this.found++
    this.differing.add(rid)
  }
}

// ------------------------------------------------------------------ the initiator

interface ReconcileIo {
  /** Sends a request and resolves with the decoded reply (undefined: failed or refused, already counted). */
  ask: (m: RequestMessage) => Promise<Message | undefined>
  /** Screens and applies entries from the peer (as a pulled page, ties decided by value). */
  apply: (entries: RemoteEntry[]) => Promise<void>
  /** False once the reconciliation should stop (disconnected, stopped). */
  alive: () => boolean
  /** We have no cursor for this peer: when it says it holds far more than we do (COPY_RATIO), stop after the first reply with `copy` set. */
  copyInstead?: boolean
}

export interface ReconcileOutcome {
  /** The responder's log id and its head when it first answered: the cursor to continue from. */
  log: string
  head: string | null
  /** True when the whole ranges were equal at the first exchange: nothing else was sent. */
  equal: boolean
  /** Range messages sent, roots found to differ, keys received and keys given. */
  rounds: number
  roots: number
  keysIn: number
  keysOut: number
  /** Stopped after the first reply: the peer says it holds far more than we do (`copyInstead`), the node copies the range instead. */
  copy?: CopyClaim
}

/**
 * Reconciles with a peer: walks the ranges, compares the keys of the roots
 * found to differ, applies what the peer has newer and gives it what it
 * lacks. Undefined when a request failed or the peer's store changed
 * under it (its log id): the next round starts again, and what was already
 * exchanged is not exchanged again.
 *
 * A walk that moved keys is followed by one more walk at once. The key
 * comparison goes by versions (values do not travel in `roots`), so a root
 * holding a tie (one version, two values: an equivocating member) beside a
 * key whose versions differ is settled by versions first; the second walk
 * finds the root still different with every version equal, and moves its
 * fields both ways (`answerRoots`), where the tie is decided. Between two
 * stores the first walk left equal, the second costs one fingerprint each
 * way.
 */
export async function reconcile (store: ReplicaStore, io: ReconcileIo,
  limits: ReconcileLimits = DEFAULT_RECONCILE_LIMITS): Promise<ReconcileOutcome | undefined> {
  const out = { rounds: 0, roots: 0, keysIn: 0, keysOut: 0 }
  let first: { log: string, head: string | null } | undefined
  for (let pass = 0; pass < 2; pass++) {
    const walk = new RangeWalk(store, limits)
    for (;;) {
      if (!io.alive()) return undefined
      const m = walk.next()
      if (m !== undefined) {
        const reply = await io.ask(m)
        if (reply?.t !== 'recond') return undefined
        if (first === undefined) {
          first = { log: reply.log, head: reply.head }
          // A peer that holds nothing takes a full copy of the range itself (peer-sync.ts): giving it everything here would send it twice.
          if (peerHoldsNothing(reply)) return { ...first, equal: false, ...out, rounds: 1 }
          // We hold next to nothing of what the peer holds (a node that wrote a few records, or got a few pushed, before its first
          // round): a copy of the range moves it once for the node, where a reconciliation with each peer would move it from each.
          const claim = io.copyInstead === true ? copyRather(store, reply) : undefined
          if (claim !== undefined) return { ...first, equal: false, ...out, rounds: 1, copy: claim }
        } else if (reply.log !== first.log) return undefined
        walk.take(reply)
        if (pass === 0 && walk.rounds === 1 && walk.done && walk.pendingRoots === 0) return { ...first, equal: true, ...out, rounds: 1 }
      }
      // The keys of the roots found so far, once enough are waiting or the walk is over.
      while (walk.pendingRoots >= EXCHANGE_ROOTS || (walk.done && walk.pendingRoots > 0)) {
        if (!(await exchange(store, io, walk.takeDiffering(EXCHANGE_ROOTS), limits, out))) return undefined
      }
      if (walk.done && walk.pendingRoots === 0) break
    }
    out.rounds += walk.rounds
    out.roots += walk.found
    if (walk.found === 0) break
  }
  return { ...first!, equal: false, ...out }
}

/** The first reply says the responder holds no root: it split the whole range into 16 empty ones, or listed none. */
function peerHoldsNothing (reply: ReconReplyMessage): boolean {
  if (reply.ranges.length === 0 || reply.diff.length > 0) return false
  return reply.ranges.every(r => 'fp' in r ? r.n === 0 : r.items.length === 0)
}

/** Compares the keys of `rids` with the peer's and moves what either lacks; false when a request failed. */
async function exchange (store: ReplicaStore, io: ReconcileIo, rids: string[], limits: ReconcileLimits,
  out: { keysIn: number, keysOut: number }): Promise<boolean> {
  let rest = rids
  while (rest.length > 0) {
    if (!io.alive()) return false
    // As many roots as our versions of them (the version rows alone: no value travels) fit one request.
    const versions = byRootOf(store.exportVersions(rest.slice(0, MAX_RECON_ROOTS)))
    let n = 0
    let bytes = 0
    const mine: RemoteEntry[] = []
    while (n < rest.length && n < MAX_RECON_ROOTS) {
      const e = versions.get(rest[n]) ?? []
      const add = e.reduce((s, x) => s + x.key.length + 24, 0)
      if (n > 0 && bytes + add > limits.entryBytes) break
      for (const x of e) mine.push(x)
      bytes += add
      n++
    }
    const chunk = rest.slice(0, n)
    const reply = await io.ask({ t: 'roots', rids: chunk, entries: mine })
    if (reply?.t !== 'rootsd') return false
    const taken = Math.min(Math.max(reply.taken, 1), chunk.length)
    rest = rest.slice(taken)
    if (reply.entries.length > 0) {
      await io.apply(reply.entries)
      out.keysIn += reply.entries.length
    }
    if (reply.want.length > 0 && !(await give(store, io, reply.want, limits, out))) return false
  }
  return true
}

/** Gives the peer our current entries of `keys` (a key we no longer hold at all is skipped), in messages of about `entryBytes`. */
async function give (store: ReplicaStore, io: ReconcileIo, keys: readonly string[], limits: ReconcileLimits, out: { keysOut: number }): Promise<boolean> {
  const wanted = new Set(keys)
  const rids = [...new Set(keys.map(ridOf))]
  const entries = store.exportRoots(rids).filter(e => wanted.has(e.key))
  for (let i = 0; i < entries.length;) {
    let j = i
    let bytes = 0
    while (j < entries.length && (j === i || bytes + entryWeight(entries[j]) <= limits.entryBytes)) bytes += entryWeight(entries[j++])
    const reply = await io.ask({ t: 'give', entries: entries.slice(i, j) })
    if (reply?.t !== 'taken') return false
    out.keysOut += j - i
    i = j
  }
  return true
}
