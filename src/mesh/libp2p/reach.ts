/**
 * How members in other homes reach this node, and it them
 * (docs/operations.md, "A mesh across homes"):
 *
 * - **Relaying** (`relay`: `auto`, `on`, `off`). A member others can dial
 *   (an announced address, a UPnP mapping, a public IPv4 address on one of
 *   its interfaces) serves circuit relay v2 to members (relay-server.ts);
 *   `on` serves whatever it has, `off` never. `auto` runs the server only on
 *   a node that has such an address or asks the router for one (UPnP), and
 *   takes reservations only while it has it.
 * - **Reservations.** A member with no address others can dial, or told its
 *   relays (`relayVia`, addresses ending in `/p2p/<peerId>`), keeps
 *   reservations on up to RESERVATIONS relays among the members it is
 *   connected to (libp2p's relay discovery, limited to `relayVia` when it
 *   is set) and keeps those relays connected: the ones it knows (`relayVia`,
 *   and every relay named in a member's relayed address) are dialed every
 *   KEEP_MS, with backoff, while it holds fewer. Its relayed addresses go out
 *   with identify and the member exchange like any other.
 * - **Addresses it cannot see**: `announce` (a forwarded port, a DNS name)
 *   is advertised beside the listen addresses; `upnp` asks the router for a
 *   mapping (port-mapping.ts).
 * - **The LAN**: mDNS under a name derived from the mesh id (lan-discovery.ts).
 *
 * Every connection, relayed ones included, runs the private network: a relay
 * serves members only, and a relayed connection is one more member
 * connection to the rest of the node.
 */
import os from 'node:os'
import { circuitRelayTransport } from '@libp2p/circuit-relay-v2'
import { identifyPush } from '@libp2p/identify'
import { mdns } from '@libp2p/mdns'
import { uPnPNAT } from '@libp2p/upnp-nat'
import { isPrivateIp } from '@libp2p/utils'
import type { Libp2p, PeerId } from '@libp2p/interface'
import { multiaddr } from '@multiformats/multiaddr'
import type { Logger } from '../../common/index.js'
import type { MeshReachView } from '../service.js'
import { relayOf } from './addresses.js'
import { LanDiscovery, mdnsServiceName } from './lan-discovery.js'
import { PortMappings, type PortMappingInit } from './port-mapping.js'
import { DEFAULT_RELAY_LIMITS, RelayLimiter, type RelayLimits } from './relay-server.js'

export type RelayMode = 'auto' | 'on' | 'off'

export interface ReachInit {
  relay: RelayMode
  /** Relays to keep reservations on (multiaddrs ending in /p2p/<peerId>); empty: any member that relays. */
  relayVia: readonly string[]
  relayLimits: RelayLimits
  /** Addresses others can dial this node at that it cannot see itself (multiaddrs, /dns4/… included). */
  announce: readonly string[]
  /** Ask the router for a port mapping: true, or the mapping's settings (tests give a fake client). */
  upnp: boolean | PortMappingInit
  /** Find and dial members on the LAN by mDNS. */
  mdns: boolean
}

export const DEFAULT_REACH: ReachInit = { relay: 'auto', relayVia: [], relayLimits: DEFAULT_RELAY_LIMITS, announce: [], upnp: false, mdns: false }

/** Relays a member behind NAT keeps a reservation on at once. */
const RESERVATIONS = 2
/** How often a member short of reservations dials the relays it knows. */
const KEEP_MS = 5_000
const KEEP_MAX_RETRY_MS = 10_000

/** Where a peer's connection runs, for `/api/mesh`. */
export interface PeerRoute { route: 'direct' | 'relayed' | null, relay: string | null, lan: boolean }

interface RelayDial { failures: number, nextTryAt: number, dialing: boolean }

export class Reach {
  readonly limiter: RelayLimiter | undefined
  readonly mappings: PortMappings | undefined
  private readonly dialable: boolean
  private readonly reserves: boolean
  private readonly via: Map<string, string>
  private node: Libp2p | undefined
  private lan: LanDiscovery | undefined
  private timer: NodeJS.Timeout | undefined
  private readonly relayDials = new Map<string, RelayDial>()

  constructor (
    private readonly init: ReachInit,
    listen: readonly string[],
    private readonly meshId: string,
    private readonly log: Logger,
    /** The relays named in members' relayed addresses (the member book). */
    private readonly knownRelays: () => Array<{ addr: string, peerId: string }> = () => []
  ) {
    this.dialable = init.announce.length > 0 || hasPublicAddress(listen)
    this.via = new Map(init.relayVia.flatMap(a => { const id = /\/p2p\/([^/]+)$/.exec(a)?.[1]; return id === undefined ? [] : [[id, a] as [string, string]] }))
    this.reserves = this.via.size > 0 || !this.dialable
    this.mappings = init.upnp === false ? undefined : new PortMappings(log.child('upnp'), init.upnp === true ? {} : init.upnp)
    const serverWanted = init.relay === 'on' || (init.relay === 'auto' && (this.dialable || this.mappings !== undefined))
    this.limiter = serverWanted ? new RelayLimiter(init.relayLimits, () => this.serves(), log.child('relay')) : undefined
  }

  /** Whether this node takes reservations now. */
  serves (): boolean {
    if (this.limiter === undefined) return false
    return this.init.relay === 'on' || this.dialable || (this.mappings?.mapped() ?? false)
  }

  /** What createLibp2p needs beside the node's own: listen and announce addresses, the relay transport, services. */
  libp2pOptions (): { listen: string[], appendAnnounce: string[], transport: ReturnType<typeof circuitRelayTransport>,
    services: Record<string, (components: never) => unknown> } {
    const seen = new Set<string>()
    const via = this.via
    // A reservation, a mapping or an announced address changes this node's addresses after its peers met it: they
    // are told (identify push), so the member exchange hands the new ones on.
    const services: Record<string, (components: never) => unknown> = { identifyPush: identifyPush() }
    if (this.limiter !== undefined) services.relay = this.limiter.server()
    if (this.mappings !== undefined) {
      // The mapping is trusted as the router gave it (no AutoNAT to confirm it: another member dialing back is what would).
      const check = typeof this.init.upnp === 'object' ? this.init.upnp.checkIntervalMs : undefined
      services.upnp = uPnPNAT({ autoConfirmAddress: true, portMappingClient: this.mappings.client(), portMappingDescription: `meta-core ${this.meshId}`,
        externalAddressCheckInterval: check })
    }
    if (this.init.mdns) services.mdns = mdns({ serviceTag: mdnsServiceName(this.meshId) })
    return {
      listen: this.reserves ? Array.from({ length: RESERVATIONS }, () => '/p2p-circuit') : [],
      appendAnnounce: [...this.init.announce],
      transport: circuitRelayTransport({
        reservationCompletionTimeout: 10_000,
        // With relays named, reservations go to those only; otherwise to any member that relays.
        discoveryFilter: {
          has: (p: PeerId) => (via.size > 0 && !via.has(p.toString())) || seen.has(p.toString()),
          add: (p: PeerId) => { seen.add(p.toString()) },
          remove: (p: PeerId) => { seen.delete(p.toString()) }
        }
      }),
      services
    }
  }

  start (node: Libp2p, blocked: ReadonlySet<string>): void {
    this.node = node
    const found = (node.services as Record<string, unknown>).mdns
    if (found !== undefined) {
      this.lan = new LanDiscovery(node, found as ConstructorParameters<typeof LanDiscovery>[1], blocked, this.log.child('lan'))
      this.lan.start()
    }
    if (this.reserves) this.keep()
    const mode = this.serves() ? 'serving' : this.limiter !== undefined ? 'waiting for an address others can dial' : 'not serving'
    this.log.info('reachability', { relay: `${this.init.relay}: ${mode}`, reservations: this.reserves ? RESERVATIONS : 0, announce: this.init.announce,
      upnp: this.mappings !== undefined, mdns: this.init.mdns })
  }

  stop (): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.lan?.stop()
    this.node = undefined
  }

  /** How a connected peer is reached: direct or through which relay, and whether it was found on the LAN. */
  route (peer: string, conns: Array<{ direct: boolean, remoteAddr: { toString: () => string } }>): PeerRoute {
    const lan = this.lan?.onLan(peer) ?? false
    if (conns.length === 0) return { route: null, relay: null, lan }
    if (conns.some(c => c.direct)) return { route: 'direct', relay: null, lan }
    return { route: 'relayed', relay: relayOf(conns[0].remoteAddr.toString())?.peerId ?? null, lan }
  }

  view (): MeshReachView {
    const addrs = this.node?.getMultiaddrs().map(String) ?? []
    const relayed = addrs.filter(a => a.includes('/p2p-circuit'))
    const relays = [...new Set(relayed.map(a => relayOf(a)?.peerId).filter((x): x is string => x !== undefined))]
    const mapped = this.mappings?.mapped() ?? false
    const announced = this.init.announce.length > 0
    return {
      reachability: announced ? 'announced' : mapped ? 'mapped' : this.dialable ? 'public' : relays.length > 0 ? 'relayed-only' : 'lan-only',
      announced: [...this.init.announce],
      relayed,
      relays,
      mdns: this.init.mdns,
      upnp: this.mappings?.view() ?? null,
      relayMode: this.init.relay,
      relay: this.limiter === undefined ? null : this.limiter.view()
    }
  }

  /** Keeps the relays this node knows connected while it holds fewer reservations than it wants. */
  private keep (): void {
    this.timer = setTimeout(() => {
      try {
        this.keepTick()
      } finally {
        if (this.node !== undefined) this.keep()
      }
    }, Math.round(KEEP_MS * (0.8 + 0.4 * Math.random())))
    this.timer.unref()
  }

  private keepTick (): void {
    const node = this.node
    if (node === undefined) return
    const held = new Set(node.getMultiaddrs().map(a => relayOf(a.toString())?.peerId).filter(x => x !== undefined))
    if (held.size >= RESERVATIONS) return
    const candidates = new Map<string, string>(this.via.size > 0 ? [...this.via] : this.knownRelays().map(r => [r.peerId, r.addr]))
    const now = Date.now()
    for (const [id, addr] of candidates) {
      if (held.has(id) || id === node.peerId.toString() || node.getPeers().some(p => p.toString() === id)) continue
      const d = this.relayDials.get(id) ?? { failures: 0, nextTryAt: 0, dialing: false }
      this.relayDials.set(id, d)
      if (d.dialing || d.nextTryAt > now) continue
      d.dialing = true
      node.dial(multiaddr(addr.endsWith(`/p2p/${id}`) ? addr : `${addr}/p2p/${id}`)).then(() => {
        if (d.failures > 0) this.log.info('relay reachable again', { relay: id, addr })
        d.failures = 0
      }, (err: unknown) => {
        d.failures++
        d.nextTryAt = Date.now() + Math.min(KEEP_MAX_RETRY_MS, KEEP_MS * 2 ** Math.min(d.failures - 1, 10))
        ;(d.failures === 1 ? this.log.info : this.log.debug)('cannot reach relay', { relay: id, addr, attempt: d.failures, err })
      }).finally(() => { d.dialing = false })
    }
  }
}

/** Whether the node listens on a public IPv4 address (on one of the machine's interfaces, for a wildcard). */
export function hasPublicAddress (listen: readonly string[]): boolean {
  const hosts: string[] = []
  for (const a of listen) {
    const m = /^\/ip4\/([^/]+)\//.exec(a)
    if (m === null) continue
    if (m[1] !== '0.0.0.0') { hosts.push(m[1]); continue }
    for (const list of Object.values(os.networkInterfaces())) {
      for (const i of list ?? []) if (i.family === 'IPv4' && !i.internal) hosts.push(i.address)
    }
  }
  // IPv6 is left out: a home's global IPv6 addresses are usually behind the router's firewall all the same.
  return hosts.some(h => isPrivateIp(h) === false)
}
