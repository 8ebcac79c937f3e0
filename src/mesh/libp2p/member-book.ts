/**
 * The members of the mesh this node knows, with their addresses: learned
 * from identify (a connected peer's listen addresses) and from the member
 * exchange (member-exchange.ts: what a connected peer is connected to), and
 * kept in the store's node-local bookkeeping (`mesh:members`, never
 * replicated, never in the digest), so a restarted node finds the mesh
 * again without its bootstrap peers. Every connection is behind the swarm
 * key, so whoever we connect to, and whoever it vouches for, is a member.
 *
 * A member's `lastSeen` is the last evidence that it was up: a connection
 * to us (kept current while it lasts, set when it drops), a connected peer
 * saying it is connected to it, or a frame it signed reaching us.
 *
 * The book is bounded: at most MAX_MEMBERS entries (the ones seen longest
 * ago go first) and MAX_ADDRS addresses each; a member not seen for
 * FORGET_AFTER_MS is forgotten. Plain data, no libp2p: the adapter feeds it.
 */
export const MEMBERS_KEY = 'mesh:members'
export const MAX_MEMBERS = 256
export const MAX_ADDRS = 8
export const FORGET_AFTER_MS = 7 * 24 * 3_600_000

export interface Member {
  /** Dialable addresses, without /p2p/<peerId>: direct ones (TCP) first, then relayed ones (…/p2p/<relay>/p2p-circuit). */
  addrs: string[]
  /** The last evidence that it was up: connected to us, named by a connected peer, or a frame it signed (ms since 1970). */
  lastSeen: number
  /** When we were last connected to it ourselves (when the connection dropped, once it has), or null: never (only heard of). */
  lastConnected: number | null
}

/** What is persisted: one line of JSON under MEMBERS_KEY. */
interface Stored { v: 1, members: Record<string, Member> }

export interface LocalKeys {
  getLocal: (key: string) => string | undefined
  setLocal: (key: string, value: string | null) => Promise<void>
}

export class MemberBook {
  private readonly members = new Map<string, Member>()
  private dirty = false

  constructor (private readonly selfId: string, private readonly accept: (addr: string) => boolean) {}

  /** Loads what a previous run kept; anything unreadable is dropped (it only costs re-learning). */
  load (keys: LocalKeys, now: number): void {
    const raw = keys.getLocal(MEMBERS_KEY)
    if (raw === undefined) return
    try {
      const s = JSON.parse(raw) as Stored
      if (s?.v !== 1 || typeof s.members !== 'object' || s.members === null) return
      for (const [id, m] of Object.entries(s.members)) {
        if (!Array.isArray(m?.addrs) || typeof m.lastSeen !== 'number') continue
        this.put(id, m.addrs.filter((a): a is string => typeof a === 'string'), m.lastSeen, typeof m.lastConnected === 'number' ? m.lastConnected : null)
      }
    } catch {
      // A book we cannot read is a book we do not have: the bootstrap list and the exchange rebuild it.
    }
    this.prune(now)
    this.dirty = false
  }

  /** Writes the book when it changed since the last save. */
  async save (keys: LocalKeys, now: number): Promise<void> {
    if (!this.dirty) return
    this.prune(now)
    this.dirty = false
    const s: Stored = { v: 1, members: Object.fromEntries(this.members) }
    await keys.setLocal(MEMBERS_KEY, JSON.stringify(s))
  }

  /** A peer we are connected to now, with the listen addresses it announced (identify); none keeps the ones known. */
  connected (id: string, addrs: readonly string[], now: number): void {
    const m = this.put(id, addrs, now, now)
    if (m !== undefined) m.lastConnected = now
  }

  /** A member a connected peer says it is connected to; true when it is new, or its addresses are. */
  heard (id: string, addrs: readonly string[], now: number): boolean {
    const before = this.members.get(id)?.addrs
    const m = this.put(id, addrs, now, null)
    return m !== undefined && m.addrs !== before
  }

  /** Our connection to a member dropped: it was up until now. Saved with the next save (the time is worth keeping across a crash). */
  left (id: string, now: number): void {
    const m = this.members.get(id)
    if (m === undefined) return
    m.lastSeen = Math.max(m.lastSeen, now)
    m.lastConnected = Math.max(m.lastConnected ?? 0, now)
    this.dirty = true
  }

  /** A frame the member signed reached us (directly or relayed): it was up. Unknown ids are not added (no address to dial). */
  seen (id: string, now: number): void {
    const m = this.members.get(id)
    if (m !== undefined && now > m.lastSeen) m.lastSeen = now
  }

  get (id: string): Readonly<Member> | undefined {
    return this.members.get(id)
  }

  ids (): string[] {
    return [...this.members.keys()]
  }

  entries (): Array<[string, Readonly<Member>]> {
    return [...this.members]
  }

  get size (): number {
    return this.members.size
  }

  private put (id: string, addrs: readonly string[], seen: number, connected: number | null): Member | undefined {
    if (id === this.selfId) return undefined
    // Direct addresses before relayed ones, so a member announcing many of both keeps some of each kind.
    const usable = [...new Set(addrs.filter(a => this.accept(a)))]
      .sort((a, b) => Number(a.includes('/p2p-circuit')) - Number(b.includes('/p2p-circuit')))
      .slice(0, MAX_ADDRS)
    let m = this.members.get(id)
    if (m === undefined) {
      if (usable.length === 0) return undefined // nothing to dial it by
      m = { addrs: usable, lastSeen: seen, lastConnected: connected }
      this.members.set(id, m)
      this.dirty = true
      if (this.members.size > MAX_MEMBERS) this.prune(seen)
      return m
    }
    // The latest announcement wins: a restarted member may listen on another port.
    if (usable.length > 0 && usable.join(' ') !== m.addrs.join(' ')) {
      m.addrs = usable
      this.dirty = true
    }
    if (seen > m.lastSeen) {
      m.lastSeen = seen
      // Seen-times alone change often; they are saved with the next real change or at stop.
    }
    return m
  }

  private prune (now: number): void {
    for (const [id, m] of this.members) {
      if (now - m.lastSeen > FORGET_AFTER_MS) {
        this.members.delete(id)
        this.dirty = true
      }
    }
    if (this.members.size <= MAX_MEMBERS) return
    const oldest = [...this.members].sort((a, b) => a[1].lastSeen - b[1].lastSeen)
    for (const [id] of oldest.slice(0, this.members.size - MAX_MEMBERS)) this.members.delete(id)
    this.dirty = true
  }

  /** Marks the book for saving at the next save (seen-times moved). */
  touch (): void {
    this.dirty = true
  }
}
