/**
 * Keeps the node connected to its bootstrap peers: dials each at start, and
 * again whenever its connection drops or a dial fails, with exponential
 * backoff (1 s doubling to 30 s, ±20 % jitter) and no limit on attempts, so a
 * peer that comes back after an hour is reconnected within half a minute.
 * A peer with another swarm key fails the handshake (a reset or a timeout,
 * never a clear error); the log says so: a warning at the first failure of
 * a streak, with what the failure looks like (`refused`: nothing listens
 * there; `handshake`: something answered and the handshake failed, which is
 * what another swarm key looks like), again every `remindMs` (10 min) while
 * the streak lasts, and `reconnected` at its end; the retries in between at
 * debug.
 *
 * An address may name its peer (`…/p2p/<peerId>`, checked in the handshake)
 * or not (`/dns4/peer2/tcp/4001`: whoever answers there with this swarm key
 * is taken, its peer id learned from the handshake). The second form lets a
 * deployment name peers by host before their identity keys exist (the
 * compose file does); pnet already limits who can answer to holders of the
 * swarm key. An address that turns out to be this node is dropped.
 */
import type { Libp2p, PeerId } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import type { Logger } from '../../common/index.js'

const FIRST_RETRY_MS = 1_000
const MAX_RETRY_MS = 30_000
const REMIND_MS = 10 * 60_000

interface Target {
  addr: Multiaddr
  /** Named in the address, or learned from the last successful dial. */
  peer: PeerId | undefined
  failures: number
  /** When the streak of failures began and when it was last said at warn. */
  failingSince: number
  lastWarned: number
  timer: NodeJS.Timeout | undefined
  dialing: boolean
}

export class PeerDialer {
  /** By address: two addresses of one peer are two targets (either may be the one that works). */
  private readonly targets = new Map<string, Target>()
  private stopped = true
  private readonly onDisconnect = (evt: CustomEvent<PeerId>): void => {
    for (const t of this.targets.values()) {
      if (t.peer?.equals(evt.detail) === true) this.later(t, FIRST_RETRY_MS)
    }
  }

  constructor (private readonly node: Libp2p, addrs: ReadonlyArray<{ addr: Multiaddr, peer?: PeerId }>, private readonly log: Logger,
    private readonly remindMs = REMIND_MS) {
    for (const { addr, peer } of addrs) this.targets.set(addr.toString(), { addr, peer, failures: 0, failingSince: 0, lastWarned: 0, timer: undefined,
      dialing: false })
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
    if (t.peer !== undefined && this.node.getConnections(t.peer).length > 0) return
    t.dialing = true
    this.node.dial(t.addr).then((conn) => {
      t.peer = conn.remotePeer
      if (t.failures > 0) this.log.info('reconnected to peer', { peer: t.peer.toString(), addr: t.addr.toString(), attempts: t.failures,
        downForMs: Date.now() - t.failingSince })
      t.failures = 0
    }, (err: unknown) => {
      if (isSelfDial(err)) {
        // A shared bootstrap list names every node, this one included: nothing to keep connected.
        this.log.debug('bootstrap address is this node: skipped', { addr: t.addr.toString() })
        this.targets.delete(t.addr.toString())
        return
      }
      const now = Date.now()
      if (t.failures === 0) t.failingSince = now
      t.failures++
      const delay = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(t.failures - 1, 10))
      // Once per streak at warn, then a reminder every remindMs, so a peer that stays away neither floods the log nor goes silent.
      const warn = t.failures === 1 || now - t.lastWarned >= this.remindMs
      if (warn) t.lastWarned = now
      const refused = isRefused(err)
      ;(warn ? this.log.warn : this.log.debug)(t.failures === 1 ? 'cannot reach peer' : 'still cannot reach peer', {
        addr: t.addr.toString(),
        peer: t.peer?.toString(),
        looksLike: refused ? 'down: nothing listens there' : 'not in this mesh (another swarm key) or unreachable: the connection was reset or timed out',
        attempt: t.failures,
        failingForMs: now - t.failingSince,
        retryInMs: delay,
        err
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

/** Nothing listens at the address (the TCP connect was refused), as opposed to a handshake that failed. */
function isRefused (err: unknown): boolean {
  const text = err instanceof Error ? `${err.message} ${String((err as { cause?: unknown }).cause)} ${(err as AggregateError).errors?.map(String).join(' ') ?? ''}` : String(err)
  return /ECONNREFUSED/.test(text)
}

/** libp2p refuses a connection whose remote turned out to be this node (InvalidPeerIdError, "Can not dial self"). */
function isSelfDial (err: unknown): boolean {
  return err instanceof Error && err.name === 'InvalidPeerIdError' && /dial self/i.test(err.message)
}
