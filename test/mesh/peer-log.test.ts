/**
 * The mesh's peer lines on their own, with a virtual clock: once per change
 * of state, and a peer that flaps is summed up instead of flooding the log.
 */
import { describe, expect, it } from 'vitest'
import { createLogger } from '../../src/common/index.js'
import { PeerLog } from '../../src/mesh/libp2p/peer-log.js'
import { emptyCounters } from '../../src/mesh/protocol/status.js'
import type { PeerStatus } from '../../src/mesh/index.js'

function setup (): { log: PeerLog, lines: string[], clock: { now: number } } {
  const lines: string[] = []
  const clock = { now: 1_000_000 }
  const log = new PeerLog(createLogger({ level: 'info', write: (l) => { lines.push(l.slice(31)) } }), () => clock.now)
  return { log, lines, clock }
}

function peer (o: Partial<PeerStatus>): PeerStatus {
  return { peerId: 'P', connected: true, cursor: null, behind: true, resyncing: false, reconciling: false, lastSyncAt: null, caughtUpAt: null, lagMs: 0,
    parked: 0, ...emptyCounters(), ...o }
}

describe('PeerLog', () => {
  it('says each change of state once: connected, resync started, caught up, disconnected', () => {
    const { log, lines, clock } = setup()
    log.connected('P', '/ip4/127.0.0.1/tcp/4001', 'outbound')
    log.connected('P', '/ip4/127.0.0.1/tcp/4001', 'outbound')
    log.observe([peer({ resyncing: true })])
    log.observe([peer({ resyncing: true })])
    clock.now += 500
    log.observe([peer({ cursor: 'c', behind: false, resyncs: 1, caughtUpAt: clock.now })])
    log.observe([peer({ cursor: 'c', behind: false, resyncs: 1, caughtUpAt: clock.now })])
    log.disconnected('P')
    log.disconnected('P')
    expect(lines).toEqual([
      'peer connected peer="P" addr="/ip4/127.0.0.1/tcp/4001" direction="outbound"',
      'full resync from peer started peer="P" addr="/ip4/127.0.0.1/tcp/4001" why="first sync with this peer"',
      'caught up with peer peer="P" addr="/ip4/127.0.0.1/tcp/4001"',
      'peer disconnected peer="P" addr="/ip4/127.0.0.1/tcp/4001"'
    ])
  })

  it('sees a resync that began and ended between two looks, and not a catch-up of the last connection', () => {
    const { log, lines, clock } = setup()
    log.connected('P', 'a', 'inbound')
    log.observe([peer({ cursor: 'c', behind: false, caughtUpAt: clock.now - 1 })])
    expect(lines).toHaveLength(1)
    log.observe([peer({ cursor: 'c', behind: false, resyncs: 1, caughtUpAt: clock.now })])
    expect(lines.slice(1)).toEqual([
      'full resync from peer started peer="P" addr="a" why="its change log cannot serve our cursor"',
      'caught up with peer peer="P" addr="a"'
    ])
  })

  it('says what came in since the catch-up began on the caught-up line', () => {
    const { log, lines, clock } = setup()
    // Counters from an earlier connection are not this catch-up's.
    log.connected('P', 'a', 'outbound')
    log.observe([peer({ cursor: 'c', behind: false, caughtUpAt: clock.now, pagesIn: 5, bytesIn: 5_000_000 })])
    log.disconnected('P')
    clock.now += 1000
    log.connected('P', 'a', 'outbound')
    log.observe([peer({ cursor: 'c', resyncing: true, resyncs: 1, pagesIn: 5, bytesIn: 5_000_000 })])
    clock.now += 12_000
    log.observe([peer({ cursor: 'c', behind: false, resyncs: 1, caughtUpAt: clock.now, pagesIn: 47, bytesIn: 47_250_000 })])
    expect(lines.filter(l => l.startsWith('caught up'))).toEqual([
      'caught up with peer peer="P" addr="a" pages=5 mb=5 seconds=0',
      'caught up with peer peer="P" addr="a" pages=42 mb=42.3 seconds=12'
    ])
  })

  it('keeps a flapping peer to a few lines a minute, and says how many it left out', () => {
    const { log, lines, clock } = setup()
    for (let i = 0; i < 50; i++) {
      log.connected('P', 'a', 'inbound')
      log.disconnected('P')
      clock.now += 100
    }
    expect(lines).toHaveLength(6)
    clock.now += 60_000
    log.connected('P', 'a', 'inbound')
    expect(lines).toHaveLength(7)
    expect(lines[6]).toBe('peer connected peer="P" addr="a" direction="inbound" suppressed=94')
  })
})
