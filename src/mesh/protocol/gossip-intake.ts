/**
 * Push frames from the gossip topic, decided synchronously (the adapter
 * answers gossipsub's validator with the verdict): the signer and relay
 * against the block list, decoding, origin = signer, record grammar, clock
 * drift, the frame sequence, and the bounds of the apply queue. A bad frame
 * is refused whole and counted against its signer (or, for a signer we hold
 * no state for, against the peer that relayed it); a frame that passed is
 * handed to the core's apply queue.
 *
 * State per signer exists only for connected peers and for signers of a
 * valid frame, at most `maxSigners` of the latter (least recently heard
 * evicted first); frames waiting to be applied are bounded per signer and in
 * bytes over all of them.
 */
import type { Logger } from '../../common/index.js'
import { decodeMessage, entryWeight, FRAME_LIMITS, WireError } from '../messages.js'
import { evictBeyond, touch } from './lru.js'
import type { MeshOptions } from './options.js'
import type { PeerSync } from './peer-sync.js'
import type { PeerKey, RemoteEntry } from './runtime.js'
import type { Screened } from './screen.js'
import { SequenceTracker } from './sequence.js'
import type { PeerCounters } from './status.js'
import type { TokenBucket } from './token-bucket.js'

/** gossipsub's three validation answers. */
export type GossipVerdict = 'accept' | 'reject' | 'ignore'

/** What the core holds per peer: its counters, its pull, its serving rate limit and its frames waiting to be applied. */
export interface PeerEntry {
  counters: PeerCounters
  sync: PeerSync
  bucket: TokenBucket | undefined
  queued: number
}

interface GossipIntakeDeps {
  selfId: PeerKey
  options: MeshOptions
  blocked: ReadonlySet<string>
  /** The core's peers, in least-recently-heard order (lru.ts). */
  peers: Map<PeerKey, PeerEntry>
  /** The peer's entry, made when there is none. */
  peer: (id: PeerKey) => PeerEntry
  screen: (entries: readonly RemoteEntry[], perEntry: boolean) => Screened
  /** Applies a frame's entries through the core's queue. */
  apply: (entries: RemoteEntry[]) => Promise<void>
  /** Starts an urgent pull round with a peer (we know we are behind it). */
  pull: (sync: PeerSync) => void
  random: () => number
  log: Logger
}

export class GossipIntake {
  private readonly sequences: SequenceTracker
  /** Bytes of gossip entries (`entryWeight`) queued and not yet applied, all signers together. */
  private queuedBytes = 0

  constructor (private readonly d: GossipIntakeDeps) {
    this.sequences = new SequenceTracker(d.options.sequenceWindow, d.options.maxSigners)
  }

  /** A push frame signed by `signer` (authenticated by the adapter) and relayed to us by `relay`. */
  admit (signer: PeerKey, bytes: Uint8Array, relay?: PeerKey): GossipVerdict {
    const { blocked, peers, options } = this.d
    // A blocked origin's frames may reach us through honest peers: drop them without punishing the relay.
    if (blocked.has(signer)) return 'ignore'
    if (relay !== undefined && blocked.has(relay)) return 'reject'
    if (signer === this.d.selfId) return 'ignore'
    // State is kept for connected peers and for signers of a valid frame only: anyone in the mesh can sign
    // with fresh keys, so a frame from a signer we do not know gets an entry only once it passed every check.
    let p = peers.get(signer)
    if (p !== undefined) this.heard(signer, p, bytes.length)
    const refuse = (why: string, fields: Record<string, unknown> = {}, count?: (c: PeerCounters) => void): GossipVerdict => {
      if (p !== undefined) {
        p.counters.framesRejected++
        count?.(p.counters)
      } else if (relay !== undefined) {
        const r = peers.get(relay)
        if (r !== undefined) r.counters.relayedRejected++
      }
      this.d.log.debug('refused a frame', { signer, relay, why, ...fields })
      return 'reject'
    }
    let m
    try {
      m = decodeMessage(bytes, FRAME_LIMITS)
    } catch (err) {
      return refuse(err instanceof WireError ? err.message : 'undecodable')
    }
    if (m.t !== 'push') return refuse(`a ${m.t} message on the gossip topic`)
    if (m.origin !== signer || m.entries.some(e => e.origin !== signer)) {
      return refuse('entries of another origin than the signer', {}, c => { c.forged++ })
    }
    const screened = this.d.screen(m.entries, false)
    if ('bad' in screened) return refuse(screened.bad)
    if (screened.drifted.length > 0) {
      // Refused, but not the relay's fault, nor surely the signer's (our own clock may be behind): no penalty.
      if (p !== undefined) {
        p.counters.framesRejected++
        p.counters.driftRefusals += screened.drifted.length
      }
      this.d.log.debug('refused a frame', { signer, why: 'entries too far ahead of our clock', entries: screened.drifted.length })
      return 'ignore'
    }
    const verdict = this.sequences.classify(m.origin, m.epoch, m.seq)
    if (verdict === 'replay') return refuse('frame sequence already seen', { epoch: m.epoch, seq: m.seq }, c => { c.replays++ })
    if (p === undefined) {
      p = this.d.peer(signer)
      this.heard(signer, p, bytes.length)
      // Connected peers stay: their number is libp2p's to bound.
      evictBeyond(peers, options.maxSigners, q => q.sync.connected, q => { q.sync.stop() })
    }
    const weight = m.entries.reduce((n, e) => n + entryWeight(e), 0)
    if (p.queued >= options.maxQueuedFrames || this.queuedBytes + weight > options.maxQueuedBytes) {
      // Not the frame's fault: leave it unrecorded and pull instead of queueing without bound.
      p.counters.framesDropped++
      this.pullSoon(signer, relay)
      return 'ignore'
    }
    this.sequences.record(m.origin, m.epoch, m.seq)
    if (verdict === 'gap') this.pullSoon(signer, relay)
    const entry = p
    entry.queued++
    this.queuedBytes += weight
    this.d.apply(screened.ok).finally(() => { entry.queued--; this.queuedBytes -= weight }).catch(() => {})
    return 'accept'
  }

  /** Counts a frame from a signer we hold state for, and makes it the most recently heard. */
  private heard (signer: PeerKey, p: PeerEntry, bytes: number): void {
    p.counters.framesIn++
    p.counters.frameBytesIn += bytes
    touch(this.d.peers, signer, p)
  }

  /** Pulls from the origin if it is a direct peer, else from the relay, else from a random connected peer. */
  private pullSoon (origin: PeerKey, relay?: PeerKey): void {
    const connected = (k: PeerKey | undefined): PeerEntry | undefined => {
      const p = k === undefined ? undefined : this.d.peers.get(k)
      return p?.sync.connected === true ? p : undefined
    }
    let target = connected(origin) ?? connected(relay)
    if (target === undefined) {
      const all = [...this.d.peers.values()].filter(p => p.sync.connected)
      if (all.length === 0) return
      target = all[Math.floor(this.d.random() * all.length)]
    }
    this.d.pull(target.sync)
  }
}
