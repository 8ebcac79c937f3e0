/**
 * The page words a peer's catch-up lag as `meta-core status` does. The page
 * may load nothing of src/, so ui/src/format.ts mirrors the status
 * command's rule; this holds the two to the same words, case by case, so
 * changing one without the other fails here.
 */
import { describe, expect, it } from 'vitest'
import { duration, heardSinceLeft as statusHeardSinceLeft, peerConnection, peerLag } from '../../src/node/status-command.js'
import { formatMs, formatPeerConnection, formatPeerLag, heardSinceLeft, type PeerLagFields } from '../../ui/src/format.js'

const synced = { connected: true, cursor: '1733-4', behind: false, resyncing: false, lastSyncAt: '2026-11-30T20:00:00.000Z', lagMs: 0 }

const CASES: Array<[string, PeerLagFields, string]> = [
  ['a peer whose head the last pull reached', synced, 'caught up'],
  ['caught up, then disconnected', { ...synced, connected: false }, 'was caught up when last synced'],
  ['behind, then disconnected', { ...synced, connected: false, behind: true, lagMs: 185_000 }, 'was behind when last synced'],
  ['synced before the node started, not since, and gone', { ...synced, connected: false, behind: true, lastSyncAt: null, lagMs: 40_000 }, 'not synced since start'],
  ['behind for 3 s', { ...synced, behind: true, lagMs: 3_049 }, 'behind 3.0 s'],
  ['behind for under a second', { ...synced, behind: true, lagMs: 420 }, 'behind 420 ms'],
  ['behind for minutes', { ...synced, behind: true, lagMs: 185_000 }, 'behind 3 min 5 s'],
  ['behind for days', { ...synced, behind: true, lagMs: 3 * 86_400_000 + 4 * 3_600_000 }, 'behind 3 d 4 h'],
  ['in a full resync', { ...synced, resyncing: true, behind: true, lagMs: 12_400 }, 'full resync, 12.4 s'],
  ['never synced, in its first resync', { connected: true, cursor: null, behind: true, resyncing: true, lastSyncAt: null, lagMs: 7_000 }, 'full resync, 7.0 s'],
  ['connected, never synced, not resyncing', { connected: true, cursor: null, behind: true, resyncing: false, lastSyncAt: null, lagMs: 950 },
    'first sync, 950 ms'],
  ['never synced and gone', { connected: false, cursor: null, behind: true, resyncing: false, lastSyncAt: null, lagMs: 40_000 }, 'never synced'],
  ['a page applied but no cursor yet, behind', { connected: true, cursor: null, behind: true, resyncing: false, lastSyncAt: synced.lastSyncAt, lagMs: 2 * 3_600_000 + 10 * 60_000 }, 'behind 2 h 10 min']
]

describe('peer lag wording', () => {
  it.each(CASES)('%s: the page and meta-core status both say it', (_what, peer, words) => {
    expect(formatPeerLag(peer)).toBe(words)
    expect(peerLag(peer)).toBe(words)
  })

  it('words every span as the status command does', () => {
    for (const ms of [0, 1, 999.4, 999.6, 1_000, 59_949, 59_951, 60_000, 3_599_999, 3_600_000, 86_399_999, 86_400_000, 10 * 86_400_000 + 1, Number.NaN,
      Infinity]) {
      expect(formatMs(ms), String(ms)).toBe(duration(ms))
    }
    expect([formatMs(950), formatMs(4_200), formatMs(185_000), formatMs(7_800_000), formatMs(273_600_000)]).toEqual(['950 ms', '4.2 s', '3 min 5 s',
      '2 h 10 min', '3 d 4 h'])
  })

  it('says how a peer reaches the node as /api/mesh does: connected, via gossip, or disconnected and when last seen or heard', () => {
    const now = Date.parse('2026-12-01T12:00:00Z')
    expect(formatPeerConnection({ connected: true, via: 'direct', lastSeenAt: '2026-12-01T12:00:00Z', lastHeardAt: null,
      lastConnectedAt: '2026-12-01T12:00:00Z' }, '2026-12-01T11:00:00Z', now)).toBe('connected')
    // A signer known only through relayed frames is not "disconnected": its changes reach us through others.
    expect(formatPeerConnection({ connected: false, via: 'gossip' }, undefined, now)).toBe('via gossip')
    expect(formatPeerConnection({ connected: false, via: 'gossip', lastHeardAt: '2026-12-01T11:59:40Z', lastConnectedAt: null }, undefined,
      now)).toBe('via gossip, last heard 20 s ago')
    // Gone: last seen when its connection dropped (the peer's own time before the member entry's).
    const gone = { connected: false, via: 'direct' as const, lastSeenAt: '2026-12-01T11:57:00Z', lastHeardAt: '2026-12-01T11:56:00Z',
      lastConnectedAt: '2026-12-01T11:57:00Z' }
    expect(formatPeerConnection(gone, '2026-12-01T11:00:00Z', now)).toBe('disconnected, last seen 3 min ago')
    // Its frames came after it left: through other peers.
    const around = { ...gone, lastHeardAt: '2026-12-01T11:59:56Z', lastSeenAt: '2026-12-01T11:59:56Z' }
    expect(formatPeerConnection(around, undefined, now)).toBe('disconnected, its changes reach us via gossip (last heard just now)')
    // No times of its own (as meta-core status may be answered): the member entry's last seen.
    expect(formatPeerConnection({ connected: false, via: 'direct' }, '2026-12-01T11:57:00Z', now)).toBe('disconnected, last seen 3 min ago')
    expect(formatPeerConnection({ connected: false, via: 'direct' }, undefined, now)).toBe('disconnected')
  })

  it('says through which relay a connected peer runs, and that it was found on the LAN, as meta-core status does', () => {
    const now = Date.parse('2026-12-01T12:00:00Z')
    const at = { via: 'direct' as const, lastSeenAt: '2026-12-01T12:00:00Z', lastHeardAt: null, lastConnectedAt: '2026-12-01T12:00:00Z' }
    const cases: Array<[Parameters<typeof peerConnection>[0], string | undefined, string]> = [
      [{ ...at, connected: true, route: 'relayed', relay: '12D3KooWrelay', lan: false }, 'vps', 'connected via relay vps'],
      [{ ...at, connected: true, route: 'relayed', relay: '12D3KooWrelay', lan: false }, undefined, 'connected via relay 12D3KooWrelay'],
      [{ ...at, connected: true, route: 'direct', relay: null, lan: true }, undefined, 'connected (LAN)'],
      [{ ...at, connected: true, route: 'direct', relay: null, lan: false }, undefined, 'connected']
    ]
    for (const [p, relayName, words] of cases) {
      expect(formatPeerConnection(p, undefined, now, relayName)).toBe(words)
      expect(peerConnection(p, undefined, now, relayName)).toBe(words)
    }
  })

  it('decides whether a peer\'s changes reach the node through others as meta-core status does', () => {
    const t = (s: number): string => new Date(Date.parse('2026-12-01T12:00:00Z') + s * 1000).toISOString()
    const cases = [
      { connected: true, lastHeardAt: t(5), lastConnectedAt: t(0) },
      { connected: false, lastHeardAt: t(5), lastConnectedAt: t(0) },
      { connected: false, lastHeardAt: t(0), lastConnectedAt: t(5) },
      { connected: false, lastHeardAt: t(5), lastConnectedAt: t(5) },
      { connected: false, lastHeardAt: t(5), lastConnectedAt: null },
      { connected: false, lastHeardAt: null, lastConnectedAt: null },
      { connected: false }
    ]
    expect(cases.map(c => heardSinceLeft(c))).toEqual([false, true, false, false, true, false, false])
    for (const c of cases) expect(statusHeardSinceLeft(c)).toBe(heardSinceLeft(c))
  })
})
