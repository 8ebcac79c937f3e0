/**
 * When this node last had evidence of each peer, for `GET /api/mesh`: a
 * connection (up now, or when it dropped), a frame the peer signed that the
 * core accepted (straight from it or relayed by others), and what the
 * member book kept (member-book.ts: across restarts, and a connected peer
 * naming it). From these a peer reads as what is true of it: connected;
 * gone and last seen at a time; or gone from our connections while its
 * frames still reach us through other peers (heard since it left).
 *
 * Plain data, no libp2p: the adapter feeds it from peer:disconnect and the
 * gossip validator. Bounded to `max` peers, the least recently touched
 * forgotten first (the core holds state for at most `maxSigners` signers
 * besides its connections: a forgotten one has no line to show it on).
 */
import type { Member } from './member-book.js'

interface Evidence {
  /** The last frame it signed that the core accepted (ms since 1970). */
  heardAt: number | null
  /** When our connection to it last dropped (ms since 1970). */
  leftAt: number | null
}

/** A peer's times as `/api/mesh` gives them (ISO 8601; null: none known). */
interface PeerTimes {
  /** The last evidence that it was up: now while connected; else the latest of its connection dropping, a frame it signed, and its member entry. */
  lastSeenAt: string | null
  /** When a frame it signed last reached this node, relayed or direct (since this node started). */
  lastHeardAt: string | null
  /** When this node was last connected to it: now while connected, else when the connection dropped (this run or one before). */
  lastConnectedAt: string | null
}

export class PeerEvidence {
  private readonly peers = new Map<string, Evidence>()

  constructor (private readonly max: number) {}

  /** A frame signed by `peer` was accepted. */
  heard (peer: string, now: number): void {
    this.entry(peer).heardAt = now
  }

  /** Our connection to `peer` dropped. */
  left (peer: string, now: number): void {
    this.entry(peer).leftAt = now
  }

  times (peer: string, connected: boolean, member: Readonly<Member> | undefined, now: number): PeerTimes {
    const e = this.peers.get(peer)
    const heardAt = e?.heardAt ?? null
    const connectedAt = connected ? now : latest(e?.leftAt ?? null, member?.lastConnected ?? null)
    const seenAt = connected ? now : latest(connectedAt, heardAt, member?.lastSeen ?? null)
    return { lastSeenAt: iso(seenAt), lastHeardAt: iso(heardAt), lastConnectedAt: iso(connectedAt) }
  }

  private entry (peer: string): Evidence {
    const e = this.peers.get(peer) ?? { heardAt: null, leftAt: null }
    // Insertion order is recency order: re-inserted at the end, the oldest go first.
    this.peers.delete(peer)
    this.peers.set(peer, e)
    for (const k of this.peers.keys()) {
      if (this.peers.size <= this.max) break
      this.peers.delete(k)
    }
    return e
  }
}

function latest (...ts: Array<number | null>): number | null {
  const known = ts.filter((t): t is number => t !== null)
  return known.length === 0 ? null : Math.max(...known)
}

function iso (ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString()
}
