/**
 * `/api/mesh` and `/api/mesh/digest`: this node's place in the mesh (its
 * peer id and listening addresses, each peer's sync position and what it
 * sent that was refused) and a digest of the replicated range, equal on two
 * nodes exactly when they hold the same records, versions and tombstones.
 * `/api/mesh/transfers`: file bytes moved to and from each peer.
 * All need the token when one is set (peer ids and addresses are internal).
 */
import type { FastifyInstance } from 'fastify'
import type { ApiContext } from '../context.js'
import { ComponentUnavailableError } from '../errors.js'
import { withErrors } from '../schemas.js'

const int = { type: 'integer' } as const
const str = { type: 'string' } as const
const strList = { type: 'array', items: str } as const

const peerSchema = {
  type: 'object',
  properties: {
    peerId: str,
    name: { type: 'string', nullable: true, description: 'the name it announced (its META_CORE_NODE_NAME), null until heard' },
    via: { type: 'string', enum: ['direct', 'gossip'], description: 'direct: connected now or before (pulled from); gossip: known only as the signer of frames others relayed' },
    addrs: { ...strList, description: 'remote addresses of its open connections' },
    connected: { type: 'boolean' },
    cursor: { type: 'string', nullable: true, description: 'our position in its change log (null: never synced)' },
    behind: { type: 'boolean', description: 'true until a pull from it reaches the head it reported' },
    resyncing: { type: 'boolean', description: 'a full resync from it is under way (or starts: this store holds nothing yet)' },
    reconciling: { type: 'boolean', description: 'a reconciliation with it is under way' },
    lastSyncAt: { type: 'string', nullable: true, description: 'when a pull from it last applied a page (ISO 8601)' },
    caughtUpAt: { type: 'string', nullable: true, description: 'when a pull from it last reached the head it reported (ISO 8601)' },
    lagMs: { ...int, description: 'catch-up lag: 0 when the last pull reached its head, else ms since one last did (or since it was first seen)' },
    lastSeenAt: { type: 'string', nullable: true, description: 'the last evidence that it was up (ISO 8601): now while connected; else the latest of its connection to this node dropping, a frame it signed reaching this node, and its member entry (null: none known)' },
    lastHeardAt: { type: 'string', nullable: true, description: 'when a frame it signed last reached this node, relayed by other peers or straight from it (ISO 8601, since this node started; null: none)' },
    lastConnectedAt: { type: 'string', nullable: true, description: 'when this node was last connected to it (ISO 8601): now while connected, else when the connection dropped (null: never). A lastHeardAt after it: its changes reach this node through other peers' },
    framesIn: { ...int, description: 'gossip frames it signed that reached us' },
    frameBytesIn: int,
    framesRejected: { ...int, description: 'frames and pull replies refused as bad (malformed, oversized, non-record keys, forged, replayed, far-future)' },
    driftRefusals: { ...int, description: 'entries refused for being more than the allowed clock drift ahead' },
    relayedRejected: { ...int, description: 'frames it relayed from signers we hold no state for, refused as bad' },
    forged: { ...int, description: 'frames whose entries named another origin than their signer, and pulled entries claiming this node\'s origin with a version it never issued' },
    entriesDropped: { ...int, description: 'pulled entries dropped: malformed (never acceptable), or past what is kept aside for retry' },
    parked: { ...int, description: 'pulled entries refused for clock drift and kept aside, retried every round' },
    replays: { ...int, description: 'frames whose sequence number was already seen' },
    framesDropped: { ...int, description: 'frames dropped because too many of its frames were waiting (pulled instead)' },
    pagesIn: int,
    bytesIn: int,
    pullFailures: int,
    resyncs: int,
    reconciles: { ...int, description: 'reconciliations with it that found differences' },
    reconcilesEqual: { ...int, description: 'checks and reconciliations that found our ranges equal (nothing else sent)' },
    reconKeysIn: { ...int, description: 'keys reconciliation moved to us from it' },
    reconKeysOut: { ...int, description: 'keys reconciliation moved from us to it' },
    pagesServed: int,
    bytesServed: int,
    busyRefusals: { ...int, description: 'its pulls refused busy: by the per-peer rate limit, or while this node resyncs from it' },
    route: { type: 'string', enum: ['direct', 'relayed'], nullable: true, description: 'how its connection runs: direct, or relayed through another member (null: not connected)' },
    relay: { type: 'string', nullable: true, description: 'the peer id of the member relaying its connection' },
    lan: { type: 'boolean', description: 'found on this node\'s LAN by mDNS' }
  }
} as const

const relaySchema = {
  type: 'object',
  nullable: true,
  description: 'what this node relays for members (circuit relay v2); null: it runs no relay',
  properties: {
    serving: { type: 'boolean', description: 'reservations are taken now (it has an address others can dial, or META_CORE_RELAY=on)' },
    limits: {
      type: 'object',
      properties: { maxCircuits: int, maxCircuitsPerPeer: int, bytesPerSecond: int, bytesPerSecondPerPeer: int }
    },
    reservations: { ...int, description: 'members reachable through this relay now' },
    circuits: { ...int, description: 'relayed connections now' },
    bytesRelayed: { ...int, description: 'bytes relayed since start' },
    bytesPerSecond: { ...int, description: 'bytes relayed per second over the last few seconds' },
    refusedReservations: int,
    refusedCircuits: { ...int, description: 'relayed connections refused at a limit' },
    throttled: { ...int, description: 'times a member\'s stream was held back for a byte rate' },
    peers: {
      type: 'array',
      items: {
        type: 'object',
        properties: { peerId: str, reserved: { type: 'boolean' }, circuits: int, bytesIn: { ...int, description: 'bytes taken in from it for relaying' }, bytesOut: { ...int, description: 'bytes relayed to it' }, bytesInPerSecond: int }
      }
    }
  }
} as const

const reachSchema = {
  type: 'object',
  nullable: true,
  description: 'how members reach this node and what it relays for them (null: standalone)',
  properties: {
    reachability: { type: 'string', enum: ['announced', 'mapped', 'public', 'relayed-only', 'lan-only'], description: 'announced (META_CORE_ANNOUNCE), mapped (a UPnP port mapping), public (a public address of its own), relayed-only (through relays it holds reservations on), lan-only (none of these)' },
    announced: strList,
    relayed: { ...strList, description: 'its relayed addresses' },
    relays: { ...strList, description: 'peer ids of the relays it holds reservations on' },
    mdns: { type: 'boolean' },
    upnp: {
      type: 'object',
      nullable: true,
      properties: {
        state: { type: 'string', enum: ['searching', 'mapped', 'failed'] },
        mappings: { type: 'array', items: { type: 'object', properties: { internal: str, external: str, protocol: str, renewedAt: str, expiresAt: str } } },
        problem: { type: 'string', nullable: true, description: 'why no mapping is held, and what to do' }
      }
    },
    relayMode: { type: 'string', enum: ['auto', 'on', 'off'] },
    relay: relaySchema
  }
} as const

const memberSchema = {
  type: 'object',
  properties: {
    peerId: str,
    addrs: { ...strList, description: 'the addresses it announced, or a peer told us' },
    connected: { type: 'boolean' },
    lastSeenAt: { ...str, description: 'the last evidence that it was up (ISO 8601): now while connected to this node; else when that connection dropped, a connected peer last named it, or a frame it signed last reached this node' },
    lastConnectedAt: { type: 'string', nullable: true, description: 'when it was last connected to this node (ISO 8601): now while connected, else when the connection dropped (null: only heard of)' },
    dialFailures: { ...int, description: 'failed dials in a row' }
  }
} as const

const joinSchema = {
  type: 'object',
  description: 'the bulk transfer (a join: a full resync that brings many records) under way, or the last one since start',
  properties: {
    active: { type: 'boolean', description: 'true from its first page on the bulk path until its last page is applied' },
    startedAt: { type: 'string', nullable: true, description: 'ISO 8601; null: none since start' },
    endedAt: { type: 'string', nullable: true, description: 'ISO 8601; null: under way, or none since start' },
    keys: { ...int, description: 'entries (keys and tombstones) received in its pages' },
    records: { ...int, description: 'records applied whole (a record\'s keys are applied together)' },
    recordsPerSecond: { ...int, description: 'records applied per second since it began' },
    expectedRecords: { ...int, nullable: true, description: 'the records the peer said it holds (null: it did not say)' },
    secondsLeft: { ...int, nullable: true, description: 'time left at the rate so far (null: unknown; 0 once ended)' },
    searchBuilding: { type: 'boolean', description: 'search is building its index (records arriving in bulk, or the rebuild after them): searches answer right, only slower, reading every record' },
    searchIndexed: { ...int, nullable: true, description: 'records the rebuild has indexed so far (null: not building)' },
    searchToIndex: { ...int, nullable: true, description: 'records the rebuild indexes (0 until it starts; null: not building)' }
  }
} as const

const copySchema = {
  type: 'object',
  description: 'the node\'s copy of the whole range from its peers (a join), since start: what it is doing, why it started and why it stopped',
  properties: {
    state: { type: 'string', enum: ['none', 'copying', 'waiting', 'done', 'abandoned'], description: 'none: no copy since start; copying: peers serve it; waiting: no peer serves it now (abandoned once none has served a page for a while); done: the range is in; abandoned: stopped before, what arrived kept, the peers reconcile instead' },
    why: { type: 'string', nullable: true, description: 'why the node copies the range' },
    peers: { ...strList, description: 'the peers serving it now' },
    startedAt: { type: 'string', nullable: true, description: 'ISO 8601' },
    endedAt: { type: 'string', nullable: true, description: 'ISO 8601; null: under way, or none' },
    stopped: { type: 'string', nullable: true, description: 'why it was abandoned' }
  }
} as const

/** Shared with `/health`: this node's clock against the peers it measures. */
export const clockSchema = {
  type: 'object',
  description: 'this node\'s clock against its peers (measured on pulls): local writes answer 503 clock_out_of_bound while it is out of bound',
  properties: {
    inBound: { type: 'boolean' },
    measured: { ...int, description: 'connected peers whose clock was measured' },
    outOfBound: { ...int, description: 'of those, the ones this node is out of bound against' },
    offsetMs: { ...int, nullable: true, description: 'median offset of this node\'s clock to theirs (positive: ahead); null with none measured' },
    hlcAheadMs: { ...int, description: 'how far the store\'s HLC is ahead of this node\'s wall clock' },
    message: { ...str, nullable: true, description: 'why writes are refused, when they are' }
  }
} as const

export function meshRoutes (app: FastifyInstance, ctx: ApiContext): void {
  const mesh = (): NonNullable<ApiContext['mesh']> => {
    if (ctx.mesh === undefined) throw new ComponentUnavailableError('mesh')
    return ctx.mesh
  }

  app.get('/api/mesh', {
    schema: {
      summary: 'This node in the mesh: its peer id and addresses, and each peer\'s sync state and refusals',
      tags: ['mesh'],
      response: withErrors({
        200: {
          type: 'object',
          properties: {
            enabled: { type: 'boolean', description: 'false on a standalone node (no swarm key)' },
            meshId: { type: 'string', nullable: true, description: 'short id derived from the swarm key: nodes of one mesh show the same' },
            self: {
              type: 'object',
              properties: {
                peerId: str,
                name: { type: 'string', nullable: true, description: 'this node\'s name (META_CORE_NODE_NAME)' },
                addrs: { ...strList, description: 'listening multiaddrs with the ports actually bound' },
                hlc: { ...str, description: 'the store\'s hybrid logical clock (16 hex digits)' },
                epoch: int,
                seq: int,
                framesOut: int,
                bytesOut: int,
                publishFailures: int,
                clock: clockSchema
              }
            },
            peers: { type: 'array', items: peerSchema },
            targetPeers: { ...int, description: 'connections this node dials learned members up to (0: only its bootstrap list)' },
            members: { type: 'array', items: memberSchema, description: 'the members whose addresses this node knows (node-local, kept across restarts)' },
            join: joinSchema,
            copy: copySchema,
            reach: reachSchema
          }
        }
      }, 503)
    }
  }, async () => {
    const view = mesh().status()
    const building = ctx.search?.building?.()
    return { ...view, join: { ...view.join, searchBuilding: building !== undefined, searchIndexed: building?.done ?? null, searchToIndex: building?.total ?? null } }
  })

  app.get('/api/mesh/transfers', {
    schema: {
      summary: 'File bytes moved to and from each peer (the byte protocol): totals, and transfers running now',
      tags: ['mesh'],
      response: withErrors({
        200: {
          type: 'object',
          properties: {
            peers: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  peerId: str,
                  bytesServed: { ...int, description: 'file bytes sent to it from this node\'s library' },
                  bytesFetched: { ...int, description: 'file bytes received from it for this node\'s clients' },
                  streamsServed: int,
                  busyRefusals: { ...int, description: 'its byte requests answered busy' },
                  servingNow: { ...int, description: 'transfers to it running now' },
                  fetchingNow: { ...int, description: 'transfers from it running now' }
                }
              }
            }
          }
        }
      }, 503)
    }
  }, async () => ({ peers: mesh().bytes?.figures() ?? [] }))

  app.get('/api/mesh/digest', {
    schema: {
      summary: 'Digest of the replicated range (keys, values or tombstones, versions): equal on two nodes exactly when their replicas are',
      tags: ['mesh'],
      response: withErrors({
        200: {
          type: 'object',
          properties: {
            digest: { ...str, description: 'SHA-256, hex' },
            keys: { ...int, description: 'versioned keys: live keys, tombstones and root tombstones' }
          }
        }
      }, 503)
    }
  }, async () => mesh().digest())

  app.get('/api/mesh/digests', {
    schema: {
      summary: 'This node\'s digest beside each connected peer\'s, asked over the mesh: which peers hold the same replica',
      tags: ['mesh'],
      response: withErrors({
        200: {
          type: 'object',
          properties: {
            self: { type: 'object', properties: { peerId: str, name: { type: 'string', nullable: true }, digest: str, keys: int } },
            peers: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  peerId: str,
                  name: { type: 'string', nullable: true },
                  digest: { type: 'string', nullable: true },
                  keys: { type: 'integer', nullable: true },
                  agrees: { type: 'boolean', nullable: true, description: 'its digest equals this node\'s (null: it gave none)' },
                  error: { ...str, description: 'why it gave no digest' }
                }
              }
            }
          }
        }
      }, 503)
    }
  }, async () => {
    const m = mesh()
    const answers = await (m.peerDigests?.() ?? Promise.resolve(new Map<string, { digest: string, keys: number } | { error: string }>()))
    // Taken after the peers answered, so a write that reached every node meanwhile does not show as a difference.
    const own = m.digest()
    const view = m.status()
    const names = new Map(view.peers.map(p => [p.peerId, p.name]))
    return {
      self: { peerId: view.self.peerId, name: view.self.name, digest: own.digest, keys: own.keys },
      peers: [...answers].sort(([a], [b]) => a.localeCompare(b)).map(([peerId, r]) => 'error' in r
        ? { peerId, name: names.get(peerId) ?? null, digest: null, keys: null, agrees: null, error: r.error }
        : { peerId, name: names.get(peerId) ?? null, digest: r.digest, keys: r.keys, agrees: r.digest === own.digest })
    }
  })
}
