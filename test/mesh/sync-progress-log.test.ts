/**
 * The catch-up lines in the log: while a peer is resynced from (or is
 * behind), a line every interval with what came in since it began and the
 * lag; nothing once it caught up (that line is the peer log's,
 * test/mesh/peer-log.test.ts), nor for a peer that is caught up.
 */
import { describe, expect, it } from 'vitest'
import { waitFor, type Logger } from '../../src/common/index.js'
import type { MeshJoinView, MeshPeerView, MeshView } from '../../src/mesh/index.js'
import { logSyncProgress } from '../../src/mesh/sync-progress-log.js'

function peer (over: Partial<MeshPeerView>): MeshPeerView {
  return {
    peerId: '12D3KooWpeer', name: 'attic', via: 'direct', addrs: [], connected: true, cursor: null, behind: false, resyncing: false, lastSyncAt: null,
      caughtUpAt: null, lagMs: 0, parked: 0, lastSeenAt: null, lastHeardAt: null, lastConnectedAt: null, route: 'direct', relay: null, lan: false,
    framesIn: 0, frameBytesIn: 0, framesRejected: 0, driftRefusals: 0, relayedRejected: 0, forged: 0, replays: 0, framesDropped: 0, pagesIn: 0, bytesIn: 0,
    pullFailures: 0, resyncs: 0, reconciles: 0, reconcilesEqual: 0, reconKeysIn: 0, reconKeysOut: 0, pagesServed: 0, bytesServed: 0, busyRefusals: 0,
      entriesDropped: 0, ...over
  }
}

describe('logSyncProgress', () => {
  it('logs a resync as it goes, and stops without a caught-up line of its own', async () => {
    const lines: Array<{ msg: string, fields?: Record<string, unknown> }> = []
    const log: Logger = { debug: () => {}, warn: () => {}, error: () => {}, info: (msg, fields) => { lines.push({ msg, fields }) }, child: () => log }
    let p = peer({ resyncing: true, behind: true, pagesIn: 1, bytesIn: 1_000_000, lagMs: 3000 })
    let looks = 0
    const join: MeshJoinView = { active: true, startedAt: null, endedAt: null, keys: 4000, records: 100, recordsPerSecond: 50, expectedRecords: 300,
      secondsLeft: 4 }
    const view = (): MeshView => ({ enabled: true, meshId: 'm', self: { peerId: 'me', name: 'me', addrs: [], hlc: '0', epoch: 0, seq: 0, framesOut: 0,
      bytesOut: 0, publishFailures: 0, clock: { inBound: true, measured: 0, outOfBound: 0, offsetMs: null, hlcAheadMs: 0, message: null } },
        peers: [p, peer({ peerId: 'idle', name: null })], targetPeers: 8, members: [], join, reach: null })
    const status = (): MeshView => { looks++; return view() }
    const stop = logSyncProgress(status, log, 20)
    try {
      await waitFor(() => { p = { ...p, pagesIn: p.pagesIn + 1, bytesIn: p.bytesIn + 2_000_000 }; return lines.length >= 2 },
        { timeoutMs: 5_000, what: 'two progress lines' })
      expect(lines[0].msg).toBe('full resync from attic (12D3KooWpeer)')
      expect(lines[0].fields).toMatchObject({ lag: '3 s', records: 100, keys: 4000, recordsPerSecond: 50, of: 300, left: '4 s' })
      expect(lines[0].fields?.pages as number).toBeGreaterThan(0)
      expect(lines[0].fields?.mb as number).toBeGreaterThan(0)
      // Caught up: the progress lines stop, with no line of their own, however many looks follow.
      p = { ...p, resyncing: false, behind: false, lagMs: 0 }
      const n = lines.length
      const from = looks
      await waitFor(() => looks >= from + 3, { timeoutMs: 5_000, what: 'three looks after the catch-up' })
      expect(lines.length).toBe(n)
      expect(lines.some(l => l.msg.startsWith('caught up'))).toBe(false)
      // Never a line for the idle peer.
      expect(lines.some(l => l.msg.includes('idle'))).toBe(false)
    } finally {
      stop()
    }
  })
})
