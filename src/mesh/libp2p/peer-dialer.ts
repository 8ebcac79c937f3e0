/**
 * Keeps the node connected to its bootstrap peers: dials each at start, and
 * again whenever its connection drops or a dial fails, with exponential
 * backoff (1 s doubling to 30 s, ±20 % jitter) and no limit on attempts, so a
 * peer that comes back after an hour is reconnected within half a minute.
 * A peer with another swarm key fails the handshake (a reset or a timeout,
 * never a clear error); the log says so.
 */
import type { Libp2p, PeerId } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import type { Logger } from '../../common/index.js'

const FIRST_RETRY_MS = 1_000
const MAX_RETRY_MS = 30_000

interface Target {
  addr: Multiaddr
  peer: PeerId
  failures: number
  timer: NodeJS.Timeout | undefined
  dialing: boolean
}

export class PeerDialer {
  private readonly targets = new Map<string, Target>()
  private stopped = true
  private readonly onDisconnect = (evt: CustomEvent<PeerId>): void => {
    const t = this.targets.get(evt.detail.toString())
    if (t !== undefined) this.later(t, FIRST_RETRY_MS)
  }

  constructor (private readonly node: Libp2p, addrs: ReadonlyArray<{ addr: Multiaddr, peer: PeerId }>, private readonly log: Logger) {
    for (const { addr, peer } of addrs) this.targets.set(peer.toString(), { addr, peer, failures: 0, timer: undefined, dialing: false })
  }

  start (): void {
    if (!this.stopped) return
    this.stopped = false
    this.node.addEventListener('peer:disconnect', this.onDisconnect)
    for (const t of this.targets.values()) this.dial(t)
  }

  stop (): void {
    this.stopped = true
    this.node.removeEventListener('peer:disconnect', this.onDisconnect)
    for (const t of this.targets.values()) {
      clearTimeout(t.timer)
      t.timer = undefined
    }
  }

  private dial (t: Target): void {
    if (this.stopped || t.dialing) return
    t.timer = undefined
    if (this.node.getConnections(t.peer).length > 0) return
    t.dialing = true
    this.node.dial(t.addr).then(() => {
      if (t.failures > 0) this.log.info('reconnected to peer', { peer: t.peer.toString() })
      t.failures = 0
    }, (err: unknown) => {
      t.failures++
      const delay = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(t.failures - 1, 10))
      // Logged once per streak at warn (then at debug), so a peer that stays away does not flood the log.
      const log = t.failures === 1 ? this.log.warn : this.log.debug
      log('cannot reach peer (down, unreachable, or not in this mesh: another swarm key looks like a reset or a timeout)', {
        addr: t.addr.toString(), attempt: t.failures, retryInMs: delay, err
      })
      this.later(t, delay)
    }).finally(() => { t.dialing = false })
  }

  private later (t: Target, delay: number): void {
    if (this.stopped) return
    clearTimeout(t.timer)
    const jittered = Math.round(delay * (0.8 + 0.4 * Math.random()))
    t.timer = setTimeout(() => { this.dial(t) }, jittered)
    t.timer.unref()
  }
}
