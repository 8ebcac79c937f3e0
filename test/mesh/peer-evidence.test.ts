/**
 * A peer's times in `/api/mesh` (peer-evidence.ts): last seen is now while
 * connected, else the latest evidence (its connection dropping, a frame it
 * signed, its member entry); last connected is when the connection
 * dropped, this run or one before; and what is kept is bounded.
 */
import { describe, expect, it } from 'vitest'
import { PeerEvidence } from '../../src/mesh/libp2p/peer-evidence.js'

const T0 = 1_800_000_000_000
const iso = (ms: number): string => new Date(ms).toISOString()

describe('PeerEvidence', () => {
  it('says now while connected, when the connection dropped once gone, and a later frame as last heard and seen', () => {
    const e = new PeerEvidence(16)
    // Connected at T0 (the member entry's times are from the connection opening): seen now, not at T0.
    const member = { addrs: [], lastSeen: T0, lastConnected: T0 }
    expect(e.times('A', true, member, T0 + 60_000)).toEqual({ lastSeenAt: iso(T0 + 60_000), lastHeardAt: null, lastConnectedAt: iso(T0 + 60_000) })
    e.heard('A', T0 + 50_000)
    e.left('A', T0 + 70_000)
    expect(e.times('A', false, member, T0 + 90_000)).toEqual({ lastSeenAt: iso(T0 + 70_000), lastHeardAt: iso(T0 + 50_000), lastConnectedAt: iso(T0 + 70_000) })
    // Its frames come through other peers after it left.
    e.heard('A', T0 + 80_000)
    expect(e.times('A', false, member, T0 + 90_000)).toEqual({ lastSeenAt: iso(T0 + 80_000), lastHeardAt: iso(T0 + 80_000), lastConnectedAt: iso(T0 + 70_000) })
  })

  it('falls back on the member entry (a run before, or a peer naming it), and knows nothing of a signer never connected', () => {
    const e = new PeerEvidence(16)
    expect(e.times('B', false, { addrs: [], lastSeen: T0 + 5_000, lastConnected: T0 }, T0 + 9_000)).toEqual({ lastSeenAt: iso(T0 + 5_000), lastHeardAt: null,
      lastConnectedAt: iso(T0) })
    e.heard('C', T0 + 1_000)
    expect(e.times('C', false, undefined, T0 + 9_000)).toEqual({ lastSeenAt: iso(T0 + 1_000), lastHeardAt: iso(T0 + 1_000), lastConnectedAt: null })
    expect(e.times('D', false, undefined, T0)).toEqual({ lastSeenAt: null, lastHeardAt: null, lastConnectedAt: null })
  })

  it('keeps at most `max` peers, the least recently touched forgotten first', () => {
    const e = new PeerEvidence(3)
    for (const [i, p] of ['P0', 'P1', 'P2'].entries()) e.heard(p, T0 + i)
    e.left('P0', T0 + 10) // touched again: P1 is now the oldest
    e.heard('P3', T0 + 11)
    expect(e.times('P1', false, undefined, T0 + 20).lastHeardAt).toBeNull()
    for (const p of ['P0', 'P2', 'P3']) expect(e.times(p, false, undefined, T0 + 20).lastHeardAt).not.toBeNull()
  })
})
