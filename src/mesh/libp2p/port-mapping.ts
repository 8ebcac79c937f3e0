/**
 * A port mapping on the home router (`META_CORE_UPNP`), through
 * `@libp2p/upnp-nat`: the service finds the router, maps the node's LAN
 * address and port, and announces the router's external address with it.
 * What the service leaves to its port-mapping client this wrapper does, so
 * that it is the node's to test and to show:
 *
 * - renewing: each mapping is asked for with a lifetime (`ttlMs`, 12 min)
 *   and asked for again `renewBeforeMs` (1 min) before it ends, for as long
 *   as the node runs (the client's own refresh is turned off);
 * - removing: every mapping is removed when the node stops;
 * - saying what went wrong, once in the log and always in status, with what
 *   to do: a router whose own external address is private (a double NAT:
 *   a router behind another, or the provider's carrier-grade NAT: the
 *   service refuses to map there, rightly), no router answering, a mapping
 *   refused;
 * - NAT-PMP: the UPnP client finds routers by SSDP only; when no router
 *   answers a search, the default gateway is asked over NAT-PMP instead.
 *
 * Tests give a fake client (`portMappingClient`): nothing here talks to a
 * router then.
 */
import fs from 'node:fs'
import { pmpNat, upnpNat, type Gateway, type MapPortOptions, type PortMapping, type UPnPNAT } from '@achingbrain/nat-port-mapper'
import { isPrivateIp } from '@libp2p/utils'
import type { AbortOptions } from '@libp2p/interface'
import type { Logger } from '../../common/index.js'
import type { MeshPortMappingView } from '../service.js'

export interface PortMappingInit {
  /** How long a mapping is asked for (ms). */
  ttlMs?: number
  /** A mapping is asked for again this long before it ends (ms). */
  renewBeforeMs?: number
  /** Tests: the client to use instead of UPnP and NAT-PMP on the real network. */
  client?: UPnPNAT
  /** How often the router's external address is asked again (ms; upnp-nat's default, 30 s). */
  checkIntervalMs?: number
}

const TTL_MS = 12 * 60_000
const RENEW_BEFORE_MS = 60_000
const WHAT_TO_DO = 'forward the p2p port on the router by hand and set META_CORE_ANNOUNCE, or let a reachable member relay for this node (docs/operations.md, "A mesh across homes")'

interface Held { gateway: Gateway, mapping: PortMapping, options: MapPortOptions, renewedAt: number, timer: NodeJS.Timeout | undefined }

export class PortMappings {
  private readonly held = new Map<string, Held>()
  private problem: string | null = null
  private readonly said = new Set<string>()
  private searched = false
  private pmp: Gateway | undefined
  private readonly ttlMs: number
  private readonly renewBeforeMs: number

  constructor (private readonly log: Logger, private readonly init: PortMappingInit = {}) {
    this.ttlMs = init.ttlMs ?? TTL_MS
    this.renewBeforeMs = Math.min(init.renewBeforeMs ?? RENEW_BEFORE_MS, this.ttlMs / 2)
  }

  /** The client for upnp-nat's `portMappingClient`. */
  client (): UPnPNAT {
    const inner = this.init.client ?? upnpNat({ autoRefresh: false })
    // The real network is searched only without a test client.
    const fallback = this.init.client === undefined
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this
    return {
      async * findGateways (options) {
        let found = false
        try {
          for await (const g of inner.findGateways(options)) {
            found = true
            yield self.watch(g)
          }
        } catch (err) {
          if (!(options?.signal?.aborted ?? false)) throw err
        }
        if (found || self.held.size > 0) return
        const gw = fallback ? defaultGateway() : undefined
        if (gw !== undefined) {
          self.pmp ??= self.watch(pmpNat(gw, { autoRefresh: false }))
          yield self.pmp
        } else if (!self.searched) {
          self.fail(`no router answered UPnP${fallback ? ' (and no default gateway to ask over NAT-PMP)' : ''}: turn UPnP on in the router, or ${WHAT_TO_DO}`)
        }
        self.searched = true
      },
      getGateway: async (descriptor, options) => this.watch(await inner.getGateway(descriptor, options))
    }
  }

  view (): MeshPortMappingView {
    const mappings = [...this.held.values()].map(h => ({
      internal: `${h.mapping.internalHost}:${h.mapping.internalPort}`,
      external: `${h.mapping.externalHost}:${h.mapping.externalPort}`,
      protocol: h.mapping.protocol,
      renewedAt: new Date(h.renewedAt).toISOString(),
      expiresAt: new Date(h.renewedAt + this.ttlMs).toISOString()
    }))
    return { state: mappings.length > 0 ? 'mapped' : this.problem !== null ? 'failed' : 'searching', mappings,
      problem: mappings.length > 0 ? null : this.problem }
  }

  /** Whether a mapping is held now (the node is reachable at the router's address). */
  mapped (): boolean {
    return this.held.size > 0
  }

  private fail (problem: string): void {
    this.problem = problem
    if (this.said.has(problem)) return
    this.said.add(problem)
    this.log.warn(`port mapping: ${problem}`)
  }

  /** The gateway as upnp-nat uses it, with our renewing, removing and reporting around it. */
  private watch (g: Gateway): Gateway {
    const key = (port: number, protocol: string | undefined): string => `${g.id} ${(protocol ?? 'tcp').toLowerCase()} ${port}`
    return {
      id: g.id,
      host: g.host,
      port: g.port,
      family: g.family,
      externalIp: async (options?: AbortOptions) => {
        let ip: string
        try {
          ip = await g.externalIp(options)
        } catch (err) {
          this.fail(`the router at ${g.host} did not say its external address (${(err as Error).message}): ${WHAT_TO_DO}`)
          throw err
        }
        if (isPrivateIp(ip) === true) {
          this.fail(`the router's external address ${ip} is itself private: this home is behind two NATs (a router behind another router, or the provider's carrier-grade NAT), so a mapping on this router would not make the node reachable; ${WHAT_TO_DO}`)
        }
        return ip
      },
      map: async (internalPort: number, internalHost: string, options?: MapPortOptions) => {
        const opts: MapPortOptions = { ...options, ttl: this.ttlMs, autoRefresh: false }
        let mapping: PortMapping
        try {
          mapping = await g.map(internalPort, internalHost, opts)
        } catch (err) {
          this.fail(`the router at ${g.host} refused to map ${internalHost}:${internalPort} (${(err as Error).message}): ${WHAT_TO_DO}`)
          throw err
        }
        const k = key(internalPort, opts.protocol)
        clearTimeout(this.held.get(k)?.timer)
        const h: Held = { gateway: g, mapping, options: opts, renewedAt: Date.now(), timer: undefined }
        this.held.set(k, h)
        this.problem = null
        this.log.info('port mapped on the router', { internal: `${mapping.internalHost}:${mapping.internalPort}`, external: `${mapping.externalHost}:${mapping.externalPort}`, protocol: mapping.protocol })
        this.renewLater(k, h)
        return mapping
      },
      mapAll: (internalPort: number, options?: MapPortOptions) => g.mapAll(internalPort, options),
      unmap: async (internalPort: number, options?: AbortOptions) => {
        for (const [k, h] of this.held) {
          if (h.gateway === g && h.mapping.internalPort === internalPort) { clearTimeout(h.timer); this.held.delete(k) }
        }
        await g.unmap(internalPort, options)
      },
      stop: async (options?: AbortOptions) => {
        // Every mapping this node holds goes with it: a router keeps a forwarded port to a stopped node otherwise.
        for (const [k, h] of this.held) {
          if (h.gateway !== g) continue
          clearTimeout(h.timer)
          this.held.delete(k)
          await g.unmap(h.mapping.internalPort, options).then(() => {
            this.log.info('port mapping removed', { external: `${h.mapping.externalHost}:${h.mapping.externalPort}` })
          }, (err: unknown) => { this.log.info('could not remove a port mapping (the router drops it when its lifetime ends)', { err }) })
        }
        await g.stop(options)
      }
    }
  }

  private renewLater (k: string, h: Held, delayMs = Math.max(1_000, this.ttlMs - this.renewBeforeMs)): void {
    h.timer = setTimeout(() => {
      if (this.held.get(k) !== h) return
      h.gateway.map(h.mapping.internalPort, h.mapping.internalHost, h.options).then((m) => {
        if (this.held.get(k) !== h) return
        h.mapping = m
        h.renewedAt = Date.now()
        this.log.debug('port mapping renewed', { external: `${m.externalHost}:${m.externalPort}` })
        this.renewLater(k, h)
      }, (err: unknown) => {
        this.fail(`the router at ${h.gateway.host} refused to renew the mapping of port ${h.mapping.internalPort} (${(err as Error).message}): ${WHAT_TO_DO}`)
        // Asked again a little later (routers restart), while the mapping it had may still run.
        if (this.held.get(k) === h) this.renewLater(k, h, Math.min(this.renewBeforeMs / 2, 30_000))
      })
    }, delayMs)
    h.timer.unref()
  }
}

/** The IPv4 default gateway from the kernel's routing table (Linux), or undefined. */
function defaultGateway (): string | undefined {
  try {
    for (const line of fs.readFileSync('/proc/net/route', 'utf8').split('\n').slice(1)) {
      const [, dest, gw] = line.trim().split(/\s+/)
      if (dest !== '00000000' || gw === undefined || gw === '00000000') continue
      const n = Number.parseInt(gw, 16)
      return [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24].join('.')
    }
  } catch {
    // Not Linux, or no routing table to read: no NAT-PMP.
  }
  return undefined
}
