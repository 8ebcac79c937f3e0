/**
 * Figures of file bytes moved between nodes (the byte protocol): per peer,
 * bytes served to it and fetched from it, copied from the mesh's counters
 * when scraped; observed by the `/file/<cid>` route as it streams a peer's
 * bytes: time to first byte, failovers to another holder, integrity
 * failures (bytes that did not match the record's CIDs).
 */
import { Counter, Histogram, type Registry } from 'prom-client'
import type { PeerByteFigures } from '../../mesh/index.js'

const PREFIX = 'meta_core_'
/** First byte from a peer: sub-millisecond on loopback, tens of ms on a LAN, seconds when a holder stalls. */
const TTFB_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export class BytesMetrics {
  private readonly ttfb: Histogram
  private readonly failovers: Counter<'reason'>
  private readonly integrity: Counter<'peer'>

  constructor (registry: Registry, figures: () => PeerByteFigures[]) {
    const registers = [registry]
    this.ttfb = new Histogram({
      name: `${PREFIX}peer_bytes_first_byte_seconds`,
      help: 'from a /file request this node has no copy for to the first byte of a peer\'s reply sent to the client',
      buckets: TTFB_BUCKETS,
      registers
    })
    this.failovers = new Counter({
      name: `${PREFIX}peer_bytes_failovers_total`,
      help: 'holders given up on while serving a /file request (refused, unreachable, failed, stalled), by reason',
      labelNames: ['reason'],
      registers
    })
    this.integrity = new Counter({
      name: `${PREFIX}peer_bytes_integrity_failures_total`,
      help: 'whole transfers from the peer whose bytes did not match the record\'s CIDs',
      labelNames: ['peer'],
      registers
    })
    const perPeer = (name: string, help: string, read: (f: PeerByteFigures) => number): void => {
      // eslint-disable-next-line no-new -- the registry keeps the metric
      new Counter({
        name: `${PREFIX}peer_bytes_${name}_total`,
        help,
        labelNames: ['peer'],
        registers,
        collect () {
          this.reset()
          for (const f of figures()) this.inc({ peer: f.peerId }, read(f))
        }
      })
    }
    perPeer('served', 'file bytes this node sent to the peer from its own library', f => f.bytesServed)
    perPeer('fetched', 'file bytes this node received from the peer for its clients', f => f.bytesFetched)
    perPeer('busy_refusals', 'byte requests by the peer answered busy (its stream or rate limit)', f => f.busyRefusals)
  }

  firstByte (seconds: number): void {
    this.ttfb.observe(seconds)
  }

  failover (reason: string): void {
    this.failovers.inc({ reason })
  }

  integrityFailure (peer: string): void {
    this.integrity.inc({ peer })
  }
}
