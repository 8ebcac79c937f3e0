/**
 * The catch-up lines in the log: while a peer is resynced from (or is
 * behind), a line every interval with what came in since it began and the
 * lag; one line when it caught up; nothing for a peer that is caught up.
 */
import { describe, expect, it } from 'vitest'
import { waitFor, type Logger } from '../../src/common/index.js'
import type { MeshJoinView, MeshPeerView, MeshView } from '../../src/mesh/index.js'
import { logSyncProgress } from '../../src/mesh/sync-progress-log.js'

function peer (over: Partial<MeshPeerView>): MeshPeerView {
  return {
    peerId: '12D3KooWpeer', name: 'attic', via: 'direct', addrs: [], connected: true, cursor: null, behind: false, resyncing: false, lastSyncAt: null, caughtUpAt: null, lagMs: 0, parked: 0,
    framesIn: 0, frameBytesIn: 0, framesRejected: 0, driftRefusals: 0, relayedRejected: 0, forged: 0, replays: 0, framesDropped: 0, pagesIn: 0, bytesIn: 0,
    pullFailures: 0, resyncs: 0, pagesServed: 0, bytesServed: 0, busyRefusals: 0, entriesDropped: 0, ...over
  }
}

describe('logSyncProgress', () => {
  it('logs a resync as it goes and once when it caught up', async () => {
    const lines: Array<{ msg: string, fields?: Record<string, unknown> }> = []
    const log: Logger = { debug: () => {}, warn: () => {}, error: () => {}, info: (msg, fields) => { lines.push({ msg, fields }) }, child: () => log }
    let p = peer({ resyncing: true, behind: true, pagesIn: 1, bytesIn: 1_000_000, lagMs: 3000 })
    const join: MeshJoinView = { active: true, startedAt: null, endedAt: null, keys: 4000, records: 100, recordsPerSecond: 50, expectedRecords: 300, secondsLeft: 4 }
    const status = (): MeshView => ({ enabled: true, meshId: 'm', self: { peerId: 'me', name: 'me', addrs: [], hlc: '0', epoch: 0, seq: 0, framesOut: 0, bytesOut: 0, publishFailures: 0, clock: { inBound: true, measured: 0, outOfBound: 0, offsetMs: null, hlcAheadMs: 0, message: null } }, peers: [p, peer({ peerId: 'idle', name: null })], targetPeers: 8, members: [], join })
    const stop = logSyncProgress(status, log, 20)
    try {
      await waitFor(() => { p = { ...p, pagesIn: p.pagesIn + 1, bytesIn: p.bytesIn + 2_000_000 }; return lines.length >= 2 }, { timeoutMs: 5_000, what: 'two progress lines' })
      expect(lines[0].msg).toBe('full resync from attic (12D3KooWpeer)')
      expect(lines[0].fields).toMatchObject({ lag: '3 s', records: 100, keys: 4000, recordsPerSecond: 50, of: 300, left: '4 s' })
      expect(lines[0].fields?.pages as number).toBeGreaterThan(0)
      expect(lines[0].fields?.mb as number).toBeGreaterThan(0)
      p = { ...p, resyncing: false, behind: false, lagMs: 0 }
      await waitFor(() => lines.some(l => l.msg.startsWith('caught up')), { timeoutMs: 5_000, what: 'the caught-up line' })
      const n = lines.length
      expect(lines[n - 1].msg).toBe('caught up with attic (12D3KooWpeer)')
      // Nothing more once caught up, and never a line for the idle peer.
      await new Promise(resolve => setTimeout(resolve, 100))
      expect(lines.length).toBe(n)
      expect(lines.some(l => l.msg.includes('idle'))).toBe(false)
    } finally {
      stop()
    }
  })
})
