/**
 * The router's two caches, as in @libp2p/gossipsub 17.1.1:
 * - MessageCache (`src/message-cache.ts`): messages by id for IWANT replies,
 *   in `length` heartbeat windows of which the newest `gossip` are advertised
 *   in IHAVE; `shift()` at each heartbeat drops the oldest window.
 * - SeenCache (`SimpleTimeCache` in `src/utils/time-cache.ts`): ids seen
 *   within a TTL, pruned at each heartbeat.
 * Message ids are numbers here (one per published message of the run); the
 * wire still carries 46-byte ids (wire-size.ts).
 */
import type { GossipMessage } from './rpc.js'

interface CacheEntry {
  msg: GossipMessage
  /** IWANT requests per peer, for the retransmission limit. */
  iwantCounts: Map<number, number>
}

export class MessageCache {
  private readonly msgs = new Map<number, CacheEntry>()
  private readonly history: GossipMessage[][] = []

  constructor (private readonly gossip: number, length: number) {
    for (let i = 0; i < length; i++) this.history.push([])
  }

  put (msg: GossipMessage): boolean {
    if (this.msgs.has(msg.id)) return false
    this.msgs.set(msg.id, { msg, iwantCounts: new Map() })
    this.history[0].push(msg)
    return true
  }

  has (id: number): boolean {
    return this.msgs.has(id)
  }

  /** The message and how many times `peer` has now asked for it. */
  getWithIWantCount (id: number, peer: number): { msg: GossipMessage, count: number } | undefined {
    const e = this.msgs.get(id)
    if (e === undefined) return undefined
    const count = (e.iwantCounts.get(peer) ?? 0) + 1
    e.iwantCounts.set(peer, count)
    return { msg: e.msg, count }
  }

  /** Ids of the newest `gossip` windows for `topic`, newest window first. */
  gossipIds (topic: string): number[] {
    const out: number[] = []
    for (let i = 0; i < this.gossip; i++) {
      for (const m of this.history[i]) if (m.topic === topic && this.msgs.has(m.id)) out.push(m.id)
    }
    return out
  }

  shift (): void {
    const last = this.history.pop()!
    for (const m of last) this.msgs.delete(m.id)
    this.history.unshift([])
  }

  get size (): number {
    return this.msgs.size
  }
}

export class SeenCache {
  private readonly until = new Map<number, number>()

  constructor (private readonly ttlMs: number) {}

  has (id: number): boolean {
    return this.until.has(id)
  }

  put (id: number, now: number): void {
    if (!this.until.has(id)) this.until.set(id, now + this.ttlMs)
  }

  /** Drops expired ids (insertion order is expiry order, since the TTL is fixed). */
  prune (now: number): void {
    for (const [id, t] of this.until) {
      if (t > now) break
      this.until.delete(id)
    }
  }

  get size (): number {
    return this.until.size
  }
}
