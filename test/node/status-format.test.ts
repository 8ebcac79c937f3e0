/**
 * `meta-core status`'s table (formatStatus) from `/health`, `/status` and
 * `/api/mesh` answers as a node gives them: a join under way as a progress
 * bar line with the share done and the time left, a join over as what it
 * brought; a peer that left as disconnected with when it was last seen (its
 * connection dropping, not opening) and its lag as of its last sync (not a
 * bare `disconnected` beside `caught up`); one that left but whose frames
 * still come relayed as reaching the node via gossip, with when it was
 * last heard; a peer known only through relayed gossip as such, with the
 * note saying its changes reach the node through its peers.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { MeshJoinView, MeshPeerView, MeshReachView, MeshView } from '../../src/mesh/index.js'
import { GOSSIP_NOTE, formatStatus, joinLine, type StatusReport } from '../../src/node/status-command.js'

const NOW = Date.parse('2026-12-01T12:00:00.000Z')
const at = (msAgo: number): string => new Date(NOW - msAgo).toISOString()

function peer (over: Partial<MeshPeerView>): MeshPeerView {
  return {
    peerId: '12D3KooWpeer', name: 'attic', via: 'direct', addrs: [], connected: true, cursor: '1733-4', behind: false, resyncing: false, lastSyncAt: at(4_200),
      caughtUpAt: at(4_200), lagMs: 0, parked: 0,
    lastSeenAt: at(0), lastHeardAt: at(9_000), lastConnectedAt: at(0), route: 'direct', relay: null, lan: false,
    framesIn: 3, frameBytesIn: 0, framesRejected: 0, driftRefusals: 0, relayedRejected: 0, forged: 0, replays: 0, framesDropped: 0, pagesIn: 2, bytesIn: 0,
    pullFailures: 0, resyncs: 0, reconciles: 0, reconcilesEqual: 0, reconKeysIn: 0, reconKeysOut: 0, pagesServed: 1, bytesServed: 0, busyRefusals: 0,
      entriesDropped: 0, ...over
  }
}

const NO_JOIN: MeshJoinView = { active: false, startedAt: null, endedAt: null, keys: 0, records: 0, recordsPerSecond: 0, expectedRecords: null,
  secondsLeft: null }

function report (peers: MeshPeerView[], join: MeshJoinView | undefined, members: MeshView['members'] = []): StatusReport {
  const mesh = {
    enabled: true,
    meshId: '8d2d10bd1d52b0f3',
    self: { peerId: '12D3KooWself', name: 'living-room', addrs: ['/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWself'], hlc: '0', epoch: 0, seq: 0, framesOut: 5, bytesOut: 0, publishFailures: 0, clock: { inBound: true, measured: 1, outOfBound: 0, offsetMs: 0, hlcAheadMs: 0, message: null } },
    peers,
    targetPeers: 8,
    members,
    ...(join === undefined ? {} : { join })
  } as MeshView
  return {
    url: 'http://127.0.0.1:9001',
    health: { status: 'ok', storage: true },
    status: { status: 'ok', version: '0.1.0', nodeId: '12D3KooWself', uptimeSeconds: 192, fileCount: 12_345, eventStreams: 1, watcher: null },
    mesh
  }
}

const lineOf = (out: string, start: string): string | undefined => out.split('\n').find(l => l.startsWith(start))
const rowOf = (out: string, peerId: string): string | undefined => out.split('\n').find(l => l.split(/\s+/).includes(peerId))

describe('meta-core status: the join', () => {
  beforeEach(() => { vi.useFakeTimers({ toFake: ['Date'] }); vi.setSystemTime(NOW) })
  afterEach(() => { vi.useRealTimers() })

  it('shows a join under way as a progress bar with the share done, the records, the rate and the time left', () => {
    const join: MeshJoinView = { active: true, startedAt: at(2_000), endedAt: null, keys: 180_000, records: 4_500, recordsPerSecond: 2_250,
      expectedRecords: 10_000, secondsLeft: 125 }
    const out = formatStatus(report([peer({ resyncing: true, behind: true, cursor: null, lagMs: 2_000 })], join))
    // Aligned with the other lines above the table: 45 % is 11 of the bar's 24 characters.
    expect(lineOf(out, 'join')).toBe('join     [###########.............] 45 %  4,500 of 10,000 records, 2,250 records/s, about 2 min 5 s left')
    expect(rowOf(out, '12D3KooWpeer')).toMatch(/\sconnected\s+full resync, 2\.0 s\s/)
  })

  it('says what it knows when the peer gave no count or the rate gives no time left yet', () => {
    const base: MeshJoinView = { active: true, startedAt: at(1_000), endedAt: null, keys: 900, records: 20, recordsPerSecond: 20, expectedRecords: null,
      secondsLeft: null }
    expect(joinLine(base, NOW)).toBe('20 records so far, 20 records/s (the peer did not say how many it holds)')
    expect(joinLine({ ...base, records: 0, recordsPerSecond: 0, expectedRecords: 400 }, NOW)).toBe('[........................] 0 %  0 of 400 records, 0 records/s, time left unknown')
    // Never past a full bar, whatever the peer said.
    expect(joinLine({ ...base, records: 450, expectedRecords: 400, secondsLeft: 0 }, NOW)).toBe('[########################] 100 %  450 of 400 records, 20 records/s, under a second left')
  })

  it('shows a join that ended as what it brought, and none when there was none (or the node does not say)', () => {
    const done: MeshJoinView = { active: false, startedAt: at(184_300), endedAt: at(180_000), keys: 390_000, records: 10_000, recordsPerSecond: 2_326,
      expectedRecords: 10_000, secondsLeft: 0 }
    expect(lineOf(formatStatus(report([peer({})], done)), 'join')).toBe('join     done: 10,000 records in 4.3 s, ended 3 min 0 s ago (2,326 records/s)')
    expect(lineOf(formatStatus(report([peer({})], NO_JOIN)), 'join')).toBeUndefined()
    expect(lineOf(formatStatus(report([peer({})], undefined)), 'join')).toBeUndefined()
  })
})

describe('meta-core status: what is true of each peer', () => {
  beforeEach(() => { vi.useFakeTimers({ toFake: ['Date'] }); vi.setSystemTime(NOW) })
  afterEach(() => { vi.useRealTimers() })

  it('says a peer that left is disconnected, when it was last seen (its connection dropping) and its lag as of its last sync', () => {
    // Connected ten minutes ago, dropped three minutes ago: last seen when it dropped; its last frame came before that.
    const gone = peer({ peerId: '12D3KooWgone', name: 'kitchen', connected: false, lastSyncAt: at(185_000), caughtUpAt: at(185_000), lastSeenAt: at(180_000),
      lastConnectedAt: at(180_000), lastHeardAt: at(190_000) })
    const members = [{ peerId: '12D3KooWgone', addrs: [], connected: false, lastSeenAt: at(180_000), lastConnectedAt: at(180_000), dialFailures: 2 }]
    const out = formatStatus(report([peer({}), gone], NO_JOIN, members))
    expect(rowOf(out, '12D3KooWgone')).toMatch(/^kitchen\s+12D3KooWgone\s+disconnected, last seen 3 min 0 s ago\s+was caught up when last synced\s+3 min 5 s ago\s+3\s/)
    expect(rowOf(out, '12D3KooWpeer')).toMatch(/\sconnected\s+caught up\s+4\.2 s ago\s/)
    const behind = peer({ peerId: '12D3KooWbehind', connected: false, behind: true, lagMs: 200_000, lastSyncAt: at(185_000), caughtUpAt: at(190_000),
      lastSeenAt: at(180_000), lastConnectedAt: at(180_000), lastHeardAt: null })
    expect(rowOf(formatStatus(report([peer({}), behind], NO_JOIN)), '12D3KooWbehind')).toMatch(/\sdisconnected, last seen 3 min 0 s ago\s+was behind when last synced\s+3 min 5 s ago\s/)
    // A node that knows nothing of it but that it is gone says so; never synced says so.
    const never = peer({ peerId: '12D3KooWnever', connected: false, cursor: null, lastSyncAt: null, caughtUpAt: null, behind: true, lagMs: 40_000,
      lastSeenAt: null, lastHeardAt: null, lastConnectedAt: null })
    expect(rowOf(formatStatus(report([peer({}), never], NO_JOIN)), '12D3KooWnever')).toMatch(/\sdisconnected\s+never synced\s+never\s/)
    // Synced only in an earlier run (a cursor, no sync since start): not "never".
    const earlier = peer({ peerId: '12D3KooWearlier', connected: false, behind: true, lastSyncAt: null, caughtUpAt: null, lagMs: 40_000,
      lastSeenAt: at(7_200_000), lastConnectedAt: at(7_200_000), lastHeardAt: null })
    expect(rowOf(formatStatus(report([peer({}), earlier], NO_JOIN)), '12D3KooWearlier')).toMatch(/\sdisconnected, last seen 2 h 0 min ago\s+not synced since start\s+before start\s/)
    expect(out).not.toContain(GOSSIP_NOTE)
  })

  it('says a peer that left but whose frames still come through other peers reaches the node via gossip, with when it was last heard', () => {
    const relayed = peer({ peerId: '12D3KooWaround', name: 'hall', connected: false, lastSyncAt: at(600_000), caughtUpAt: at(600_000),
      lastConnectedAt: at(600_000), lastHeardAt: at(4_000), lastSeenAt: at(4_000) })
    const out = formatStatus(report([peer({}), relayed], NO_JOIN))
    expect(rowOf(out, '12D3KooWaround')).toMatch(/^hall\s+12D3KooWaround\s+disconnected, its changes reach us via gossip \(last heard 4\.0 s ago\)\s+was caught up when last synced\s+10 min 0 s ago\s/)
    // Heard last before it left: that is no evidence its changes still come; last seen says all there is.
    const quiet = { ...relayed, lastHeardAt: at(601_000), lastSeenAt: at(600_000) }
    expect(rowOf(formatStatus(report([peer({}), quiet], NO_JOIN)), '12D3KooWaround')).toMatch(/\sdisconnected, last seen 10 min 0 s ago\s+was caught up/)
  })

  it('reads an older node that gives no times of its own: last seen from the member entry', () => {
    const older = peer({ peerId: '12D3KooWolder', connected: false, lastSyncAt: at(185_000), caughtUpAt: at(185_000) })
    for (const k of ['lastSeenAt', 'lastHeardAt', 'lastConnectedAt'] as const) delete (older as Partial<MeshPeerView>)[k]
    const members = [{ peerId: '12D3KooWolder', addrs: [], connected: false, lastSeenAt: at(180_000), lastConnectedAt: at(600_000), dialFailures: 2 }]
    expect(rowOf(formatStatus(report([peer({}), older], NO_JOIN, members)), '12D3KooWolder')).toMatch(/\sdisconnected, last seen 3 min 0 s ago\s+was caught up when last synced\s/)
  })

  it('says a signer heard only through relayed gossip reaches the node through its peers: no lag, no sync of its own', () => {
    const relayed = peer({ peerId: '12D3KooWrelayed', name: null, via: 'gossip', connected: false, cursor: null, lastSyncAt: null, caughtUpAt: null,
      behind: true, lagMs: 90_000, pagesIn: 0, pagesServed: 0, lastConnectedAt: null, lastHeardAt: at(2_000), lastSeenAt: at(2_000) })
    const out = formatStatus(report([peer({}), relayed], NO_JOIN))
    expect(rowOf(out, '12D3KooWrelayed')).toMatch(/^-\s+12D3KooWrelayed\s+via gossip, last heard 2\.0 s ago\s+-\s+-\s+3\s/)
    expect(lineOf(out, 'mesh')).toContain('1 peers (1 connected), 1 heard via gossip')
    expect(out.split('\n').slice(-1)[0]).toBe(GOSSIP_NOTE)
    expect(GOSSIP_NOTE).toMatch(/its changes reach this node through them/)
  })
})

describe('meta-core status: health reasons and the full hash', () => {
  it('says why the node is degraded, and what the full hash has left, its rate and the time left', () => {
    const r = report([peer({})], undefined)
    r.health = { status: 'degraded', storage: true, reasons: [{ reason: 'watcher', message: 'the watcher\'s last scan failed at 2026-12-01T11:59:00.000Z: files path unavailable' }] }
    r.status.watcher = {
      enabled: true,
      isScanning: false,
      fileCount: 12,
      progress: { filesPending: 0 },
      fullHash: { state: 'hashing', algorithms: ['sha2-256', 'ipfs'], filesHashed: 3, bytesHashed: 4_500_000_000, filesKnown: 2, filesPending: 7,
        bytesPending: 9_000_000_000, mbPerSecond: 64.1, etaSeconds: 140 }
    }
    const out = formatStatus(r)
    expect(lineOf(out, 'node ')).toContain('degraded')
    expect(lineOf(out, 'health')).toBe('health   the watcher\'s last scan failed at 2026-12-01T11:59:00.000Z: files path unavailable')
    expect(lineOf(out, 'hashes')).toBe('hashes   sha2-256, ipfs: 7 files (9.0 GB) to go, 64.1 MB/s, about 2 min 20 s left; 3 files (4.5 GB) hashed since start, 2 had their CIDs already')
    r.status.watcher.fullHash = { ...r.status.watcher.fullHash!, state: 'idle', filesPending: 0, bytesPending: 0 }
    expect(lineOf(formatStatus(r), 'hashes')).toBe('hashes   sha2-256, ipfs: up to date; 3 files (4.5 GB) hashed since start, 2 had their CIDs already')
  })
})

describe('meta-core status: how other homes reach the node', () => {
  const relay: NonNullable<MeshReachView['relay']> = {
    serving: true,
    limits: { maxCircuits: 128, maxCircuitsPerPeer: 16, bytesPerSecond: 134_217_728, bytesPerSecondPerPeer: 67_108_864 },
    reservations: 4, circuits: 3, bytesRelayed: 25_300_000, bytesPerSecond: 1_200_000, refusedReservations: 0, refusedCircuits: 2, throttled: 0, peers: []
  }
  const reach = (over: Partial<MeshReachView>): MeshReachView => ({ reachability: 'lan-only', announced: [], relayed: [], relays: [], mdns: false, upnp: null,
    relayMode: 'auto', relay: null, ...over })
  const out = (r: MeshReachView | null, peers = [peer({})]): string => formatStatus({ ...report(peers, undefined),
    mesh: { ...report(peers, undefined).mesh, reach: r } })

  it('says how members reach it, what it relays, and its router\'s mapping, under p2p', () => {
    const vps = peer({ peerId: '12D3KooWvps', name: 'vps' })
    const behind = out(reach({ reachability: 'relayed-only', relays: ['12D3KooWvps'], relayed: ['/ip4/203.0.113.5/tcp/4001/p2p/12D3KooWvps/p2p-circuit/p2p/12D3KooWself'], mdns: true }), [vps, peer({ route: 'relayed', relay: '12D3KooWvps' }), peer({ peerId: '12D3KooWlan', lan: true })])
    expect(lineOf(behind, 'reach')).toBe('reach    relayed only, through vps, LAN discovery (mDNS) on')
    expect(rowOf(behind, '12D3KooWpeer')).toMatch(/\sconnected via relay vps\s/)
    expect(rowOf(behind, '12D3KooWlan')).toMatch(/\sconnected \(LAN\)\s/)
    const served = out(reach({ reachability: 'announced', announced: ['/dns4/house1.example.org/tcp/4001'], relay }))
    expect(lineOf(served, 'reach')).toBe('reach    announced at /dns4/house1.example.org/tcp/4001')
    expect(lineOf(served, 'relay')).toBe('relay    serving 4 members: 3 relayed connections, 1.2 MB/s, 25 MB since start, 2 refused; limits 16 connections and 67 MB/s per member, 128 and 134 MB/s in all')
    const waiting = out(reach({ relay: { ...relay, serving: false }, upnp: { state: 'failed', mappings: [], problem: 'the router\'s external address 100.64.1.2 is itself private' } }))
    expect(lineOf(waiting, 'reach')).toMatch(/^reach    LAN only: members outside this LAN \(or VPN\) cannot reach it; set META_CORE_ANNOUNCE or META_CORE_UPNP/)
    expect(lineOf(waiting, 'relay')).toBe('relay    auto: not serving until the node has an address others can dial')
    expect(lineOf(waiting, 'upnp')).toBe('upnp     failed: the router\'s external address 100.64.1.2 is itself private')
    const mapped = out(reach({ reachability: 'mapped', upnp: { state: 'mapped', mappings: [{ internal: '192.168.1.10:4001', external: '198.51.100.7:4001',
      protocol: 'TCP', renewedAt: at(0), expiresAt: at(-720_000) }], problem: null } }))
    expect(lineOf(mapped, 'reach')).toBe('reach    mapped by the router at 198.51.100.7:4001')
    expect(lineOf(mapped, 'upnp')).toBe('upnp     mapped 192.168.1.10:4001 as 198.51.100.7:4001 (TCP)')
    // A standalone node, or an older one that does not say: no such lines.
    expect(lineOf(out(null), 'reach')).toBeUndefined()
  })
})
