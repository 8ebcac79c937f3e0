/**
 * `/api/mesh`, `/api/mesh/transfers`, `/api/mesh/digest(s)`: the mesh's
 * status as the API shows it. These describe src/mesh's views (MeshView and
 * the rest, in src/mesh/service.ts), which keep their own interfaces; the
 * route returns the mesh's objects as they are, so the compiler checks each
 * view against its schema here, and test/api/wire-types.test.ts holds the
 * two equal field for field.
 */
import { Nullable, StringEnum, StringList, Type, type Static } from './kit.js'

const int = (description?: string) => Type.Integer(description === undefined ? {} : { description })
const nullableString = (description?: string) => Nullable(Type.String(description === undefined ? {} : { description }))

export const MeshPeer = Type.Object({
  peerId: Type.String(),
  name: nullableString('the name it announced (its META_CORE_NODE_NAME), null until heard'),
  via: StringEnum(['direct', 'gossip'], { description: 'direct: connected now or before (pulled from); gossip: known only as the signer of frames others relayed' }),
  addrs: Type.Array(Type.String(), { description: 'remote addresses of its open connections' }),
  connected: Type.Boolean(),
  cursor: nullableString('our position in its change log (null: never synced)'),
  behind: Type.Boolean({ description: 'true until a pull from it reaches the head it reported' }),
  resyncing: Type.Boolean({ description: 'a full resync from it is under way (or starts: this store holds nothing yet)' }),
  // The mesh sends it (its core's peer status carries it); src/mesh's MeshPeerView does not name it.
  reconciling: Type.Optional(Type.Boolean({ description: 'a reconciliation with it is under way' })),
  lastSyncAt: nullableString('when a pull from it last applied a page (ISO 8601)'),
  caughtUpAt: nullableString('when a pull from it last reached the head it reported (ISO 8601)'),
  lagMs: int('catch-up lag: 0 when the last pull reached its head, else ms since one last did (or since it was first seen)'),
  lastSeenAt: nullableString('the last evidence that it was up (ISO 8601): now while connected; else the latest of its connection to this node ' +
    'dropping, a frame it signed reaching this node, and its member entry (null: none known)'),
  lastHeardAt: nullableString('when a frame it signed last reached this node, relayed by other peers or straight from it (ISO 8601, since this node started; null: none)'),
  lastConnectedAt: nullableString('when this node was last connected to it (ISO 8601): now while connected, else when the connection dropped (null: never). ' +
    'A lastHeardAt after it: its changes reach this node through other peers'),
  framesIn: int('gossip frames it signed that reached us'),
  frameBytesIn: int(),
  framesRejected: int('frames and pull replies refused as bad (malformed, oversized, non-record keys, forged, replayed, far-future)'),
  driftRefusals: int('entries refused for being more than the allowed clock drift ahead'),
  relayedRejected: int('frames it relayed from signers we hold no state for, refused as bad'),
  forged: int('frames whose entries named another origin than their signer, and pulled entries claiming this node\'s origin with a version it never issued'),
  entriesDropped: int('pulled entries dropped: malformed (never acceptable), or past what is kept aside for retry'),
  parked: int('pulled entries refused for clock drift and kept aside, retried every round'),
  replays: int('frames whose sequence number was already seen'),
  framesDropped: int('frames dropped because too many of its frames were waiting (pulled instead)'),
  pagesIn: int(),
  bytesIn: int(),
  pullFailures: int(),
  resyncs: int(),
  reconciles: int('reconciliations with it that found differences'),
  reconcilesEqual: int('checks and reconciliations that found our ranges equal (nothing else sent)'),
  reconKeysIn: int('keys reconciliation moved to us from it'),
  reconKeysOut: int('keys reconciliation moved from us to it'),
  pagesServed: int(),
  bytesServed: int(),
  busyRefusals: int('its pulls refused busy: by the per-peer rate limit, or while this node resyncs from it'),
  route: Nullable(StringEnum(['direct', 'relayed'], { description: 'how its connection runs: direct, or relayed through another member (null: not connected)' })),
  relay: nullableString('the peer id of the member relaying its connection'),
  lan: Type.Boolean({ description: 'found on this node\'s LAN by mDNS' })
})
export type MeshPeer = Static<typeof MeshPeer>

export const MeshRelayLimits = Type.Object({ maxCircuits: int(), maxCircuitsPerPeer: int(), bytesPerSecond: int(), bytesPerSecondPerPeer: int() })
export type MeshRelayLimits = Static<typeof MeshRelayLimits>

export const MeshRelayPeer = Type.Object({
  peerId: Type.String(),
  reserved: Type.Boolean(),
  circuits: int(),
  bytesIn: int('bytes taken in from it for relaying'),
  bytesOut: int('bytes relayed to it'),
  bytesInPerSecond: int()
})
export type MeshRelayPeer = Static<typeof MeshRelayPeer>

export const MeshRelay = Type.Object({
  serving: Type.Boolean({ description: 'reservations are taken now (it has an address others can dial, or META_CORE_RELAY=on)' }),
  limits: MeshRelayLimits,
  reservations: int('members reachable through this relay now'),
  circuits: int('relayed connections now'),
  bytesRelayed: int('bytes relayed since start'),
  bytesPerSecond: int('bytes relayed per second over the last few seconds'),
  refusedReservations: int(),
  refusedCircuits: int('relayed connections refused at a limit'),
  throttled: int('times a member\'s stream was held back for a byte rate'),
  peers: Type.Array(MeshRelayPeer)
}, { description: 'what this node relays for members (circuit relay v2); null: it runs no relay' })
export type MeshRelay = Static<typeof MeshRelay>

export const MeshMapping = Type.Object({ internal: Type.String(), external: Type.String(), protocol: Type.String(), renewedAt: Type.String(),
  expiresAt: Type.String() })
export type MeshMapping = Static<typeof MeshMapping>

export const MeshPortMapping = Type.Object({
  state: StringEnum(['searching', 'mapped', 'failed']),
  mappings: Type.Array(MeshMapping),
  problem: nullableString('why no mapping is held, and what to do')
})
export type MeshPortMapping = Static<typeof MeshPortMapping>

export const MeshReach = Type.Object({
  reachability: StringEnum(['announced', 'mapped', 'public', 'relayed-only', 'lan-only'], {
    description: 'announced (META_CORE_ANNOUNCE), mapped (a UPnP port mapping), public (a public address of its own), ' +
      'relayed-only (through relays it holds reservations on), lan-only (none of these)'
  }),
  announced: StringList,
  relayed: Type.Array(Type.String(), { description: 'its relayed addresses' }),
  relays: Type.Array(Type.String(), { description: 'peer ids of the relays it holds reservations on' }),
  mdns: Type.Boolean(),
  upnp: Nullable(MeshPortMapping),
  relayMode: StringEnum(['auto', 'on', 'off']),
  relay: Nullable(MeshRelay)
}, { description: 'how members reach this node and what it relays for them (null: standalone)' })
export type MeshReach = Static<typeof MeshReach>

export const MeshMember = Type.Object({
  peerId: Type.String(),
  addrs: Type.Array(Type.String(), { description: 'the addresses it announced, or a peer told us' }),
  connected: Type.Boolean(),
  lastSeenAt: Type.String({
    description: 'the last evidence that it was up (ISO 8601): now while connected to this node; ' +
      'else when that connection dropped, a connected peer last named it, or a frame it signed last reached this node'
  }),
  lastConnectedAt: nullableString('when it was last connected to this node (ISO 8601): now while connected, else when the connection dropped (null: only heard of)'),
  dialFailures: int('failed dials in a row')
})
export type MeshMember = Static<typeof MeshMember>

export const MeshJoin = Type.Object({
  active: Type.Boolean({ description: 'true from its first page on the bulk path until its last page is applied' }),
  startedAt: nullableString('ISO 8601; null: none since start'),
  endedAt: nullableString('ISO 8601; null: under way, or none since start'),
  keys: int('entries (keys and tombstones) received in its pages'),
  records: int('records applied whole (a record\'s keys are applied together)'),
  recordsPerSecond: int('records applied per second since it began'),
  expectedRecords: Nullable(int('the records the peer said it holds (null: it did not say)')),
  secondsLeft: Nullable(int('time left at the rate so far (null: unknown; 0 once ended)')),
  searchBuilding: Type.Boolean({
    description: 'search is building its index (records arriving in bulk, or the rebuild after them): searches answer right, only slower, reading every record'
  }),
  searchIndexed: Nullable(int('records the rebuild has indexed so far (null: not building)')),
  searchToIndex: Nullable(int('records the rebuild indexes (0 until it starts; null: not building)'))
}, { description: 'the bulk transfer (a join: a full resync that brings many records) under way, or the last one since start' })
export type MeshJoin = Static<typeof MeshJoin>

export const MeshCopy = Type.Object({
  state: StringEnum(['none', 'copying', 'waiting', 'done', 'abandoned'], {
    description: 'none: no copy since start; copying: peers serve it; waiting: no peer serves it now (abandoned once none has served a page for a while); ' +
      'done: the range is in; abandoned: stopped before, what arrived kept, the peers reconcile instead'
  }),
  why: nullableString('why the node copies the range'),
  peers: Type.Array(Type.String(), { description: 'the peers serving it now' }),
  startedAt: nullableString('ISO 8601'),
  endedAt: nullableString('ISO 8601; null: under way, or none'),
  stopped: nullableString('why it was abandoned')
}, { description: 'the node\'s copy of the whole range from its peers (a join), since start: what it is doing, why it started and why it stopped' })
export type MeshCopy = Static<typeof MeshCopy>

/** Shared with `/health`: this node's clock against the peers it measures. */
export const MeshClock = Type.Object({
  inBound: Type.Boolean(),
  measured: int('connected peers whose clock was measured'),
  outOfBound: int('of those, the ones this node is out of bound against'),
  offsetMs: Nullable(int('median offset of this node\'s clock to theirs (positive: ahead); null with none measured')),
  hlcAheadMs: int('how far the store\'s HLC is ahead of this node\'s wall clock'),
  message: nullableString('why writes are refused, when they are')
}, { description: 'this node\'s clock against its peers (measured on pulls): local writes answer 503 clock_out_of_bound while it is out of bound' })
export type MeshClock = Static<typeof MeshClock>

export const MeshSelf = Type.Object({
  peerId: Type.String(),
  name: nullableString('this node\'s name (META_CORE_NODE_NAME)'),
  addrs: Type.Array(Type.String(), { description: 'listening multiaddrs with the ports actually bound' }),
  hlc: Type.String({ description: 'the store\'s hybrid logical clock (16 hex digits)' }),
  epoch: int(),
  seq: int(),
  framesOut: int(),
  bytesOut: int(),
  publishFailures: int(),
  clock: MeshClock
})
export type MeshSelf = Static<typeof MeshSelf>

/** GET /api/mesh. A standalone node answers `enabled: false`. */
export const MeshStatus = Type.Object({
  enabled: Type.Boolean({ description: 'false on a standalone node (no swarm key)' }),
  meshId: nullableString('short id derived from the swarm key: nodes of one mesh show the same'),
  self: MeshSelf,
  peers: Type.Array(MeshPeer),
  targetPeers: int('connections this node dials learned members up to (0: only its bootstrap list)'),
  members: Type.Array(MeshMember, { description: 'the members whose addresses this node knows (node-local, kept across restarts)' }),
  join: MeshJoin,
  copy: Type.Optional(MeshCopy),
  reach: Nullable(MeshReach)
})
export type MeshStatus = Static<typeof MeshStatus>

export const MeshTransferPeer = Type.Object({
  peerId: Type.String(),
  bytesServed: int('file bytes sent to it from this node\'s library'),
  bytesFetched: int('file bytes received from it for this node\'s clients'),
  streamsServed: int(),
  busyRefusals: int('its byte requests answered busy'),
  servingNow: int('transfers to it running now'),
  fetchingNow: int('transfers from it running now')
})
export type MeshTransferPeer = Static<typeof MeshTransferPeer>

export const MeshTransfers = Type.Object({ peers: Type.Array(MeshTransferPeer) })
export type MeshTransfers = Static<typeof MeshTransfers>

/** GET /api/mesh/digest */
export const MeshDigest = Type.Object({
  digest: Type.String({ description: 'SHA-256, hex' }),
  keys: int('versioned keys: live keys, tombstones and root tombstones')
})
export type MeshDigest = Static<typeof MeshDigest>

/** A peer's entry in GET /api/mesh/digests. */
export const PeerDigest = Type.Object({
  peerId: Type.String(),
  name: Nullable(Type.String()),
  digest: Nullable(Type.String()),
  keys: Nullable(Type.Integer()),
  agrees: Nullable(Type.Boolean({ description: 'its digest equals this node\'s (null: it gave none)' })),
  error: Type.Optional(Type.String({ description: 'why it gave no digest' }))
})
export type PeerDigest = Static<typeof PeerDigest>

/** GET /api/mesh/digests: this node's digest beside each connected peer's, asked over the mesh. */
export const MeshDigests = Type.Object({
  self: Type.Object({ peerId: Type.String(), name: Nullable(Type.String()), digest: Type.String(), keys: Type.Integer() }),
  peers: Type.Array(PeerDigest)
})
export type MeshDigests = Static<typeof MeshDigests>
