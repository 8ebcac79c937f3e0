/**
 * This node's clock against its peers' (CockroachDB's max-offset rule).
 *
 * Every valid pull reply (a page, a fingerprint, a key comparison) carries
 * the serving peer's wall clock; with the round trip it gives the offset of
 * our clock to that peer within ±rtt/2. Only established members count: a
 * member is sampled only from replies it delivered (a refusal carries no
 * clock: peer-sync.ts), and counts once, its latest sample, so identities
 * made to answer `busy` with a clock of their choosing outvote nobody. A
 * sample is kept per connected peer and aged with the runtime's monotonic
 * clock: a step of our wall clock after the sample (NTP, a VM resume) moves
 * the estimate by the same amount at once, with no message exchanged.
 *
 * Against a peer we are out of bound when the offset is beyond
 * `maxClockOffsetMs` by more than its uncertainty, or when the next version
 * we would issue (our HLC) is past what that peer accepts (its estimated
 * wall clock plus `maxClockDriftMs`): a persisted HLC still ahead after our
 * clock was corrected. Out of bound against most (more than half) of the
 * peers measured, the node refuses local writes until it is back in bound;
 * with no peer measured it writes as a node alone does. The refusal says
 * the clocks disagree and by how much; it says this node's clock is the one
 * off only when the peers it is out of bound against agree with each other
 * (two clocks alone cannot tell which one is wrong).
 */
import { parseHlc } from '../../records/index.js'
import type { ClockRefusal } from '../../records/index.js'
import type { MeshRuntime, PeerKey } from './runtime.js'

interface ClockSample {
  /** Our wall clock minus the peer's at the sample (ms). */
  offsetMs: number
  /** Half the round trip: the true offset is within ±this. */
  uncertaintyMs: number
  /** Our wall minus monotonic clock at the sample: how far our wall clock moved since is added to the offset. */
  skewAt: number
}

export interface ClockStatus {
  /** False while local writes are refused. */
  inBound: boolean
  /** Peers with a sample (connected peers whose replies carry their clock). */
  measured: number
  /** Of those, the ones we are out of bound against. */
  outOfBound: number
  /** Median offset of our clock to the measured peers (ms, positive: ahead); null with none measured. */
  offsetMs: number | null
  /** How far our HLC is ahead of our wall clock (ms; 0 when not ahead). */
  hlcAheadMs: number
  /** Why writes are refused, when they are. */
  message: string | null
}

/** A sample whose wall-clock round trip and monotonic round trip differ by more than this saw a clock step: dropped. */
const STEP_DURING_SAMPLE_MS = 1000

export class ClockGuard {
  private readonly samples = new Map<PeerKey, ClockSample>()
  private wasInBound = true

  constructor (
    private readonly rt: MeshRuntime,
    private readonly opts: { maxClockOffsetMs: number, maxClockDriftMs: number },
    private readonly hlc: () => string,
    private readonly onChange: (s: ClockStatus) => void
  ) {}

  private mono (): number {
    return this.rt.monotonic?.() ?? this.rt.now()
  }

  /** Where a request starts: pass it to `record` with the reply. */
  mark (): { wall: number, mono: number } {
    return { wall: this.rt.now(), mono: this.mono() }
  }

  /** A valid reply from `peer` carrying its wall clock `peerWall`, for a request sent at `sent`. */
  record (peer: PeerKey, sent: { wall: number, mono: number }, peerWall: number): void {
    const wall = this.rt.now()
    const mono = this.mono()
    const rtt = mono - sent.mono
    if (rtt < 0 || Math.abs((wall - sent.wall) - rtt) > STEP_DURING_SAMPLE_MS) return
    this.samples.set(peer, { offsetMs: sent.wall + rtt / 2 - peerWall, uncertaintyMs: rtt / 2, skewAt: sent.wall - sent.mono })
    this.check()
  }

  forget (peer: PeerKey): void {
    if (this.samples.delete(peer)) this.check()
  }

  /** Undefined while local writes may go on; else why not. */
  refusal (): ClockRefusal | undefined {
    if (this.samples.size === 0) {
      if (!this.wasInBound) this.check()
      return undefined
    }
    const s = this.check()
    return s.inBound ? undefined : { message: s.message ?? 'clock out of bound', offsetMs: s.offsetMs ?? 0 }
  }

  status (): ClockStatus {
    return this.check()
  }

  /** Evaluates the bound now; tells `onChange` when it changed. */
  private check (): ClockStatus {
    const now = this.rt.now()
    const drift = now - this.mono()
    const h = parseHlc(this.hlc())
    const hlcMs = h === undefined ? 0 : h.ms
    const offsets: number[] = []
    /** Offsets to the peers whose clocks ours is out of bound against. */
    const apart: number[] = []
    let out = 0
    let worstAhead = 0
    for (const s of this.samples.values()) {
      const off = s.offsetMs + (drift - s.skewAt)
      offsets.push(off)
      // What this peer accepts: its wall clock (ours minus the offset) plus the drift limit.
      const past = hlcMs - (now - off + this.opts.maxClockDriftMs)
      if (Math.abs(off) - s.uncertaintyMs > this.opts.maxClockOffsetMs) { out++; apart.push(off) }
      else if (past - s.uncertaintyMs > 0) { out++; worstAhead = Math.max(worstAhead, past) }
    }
    offsets.sort((a, b) => a - b)
    const median = offsets.length === 0 ? null : offsets[Math.floor(offsets.length / 2)]
    const inBound = out * 2 <= offsets.length
    let message: string | null = null
    if (!inBound) message = this.refusalMessage(median ?? 0, apart, out, offsets.length, worstAhead, hlcMs - now)
    const status: ClockStatus = { inBound, measured: offsets.length, outOfBound: out, offsetMs: median === null ? null : Math.round(median),
      hlcAheadMs: Math.max(0, Math.round(hlcMs - now)), message }
    if (inBound !== this.wasInBound) {
      this.wasInBound = inBound
      this.onChange(status)
    }
    return status
  }

  /**
   * Why writes are refused. The HLC left ahead is this node's own fact. A
   * clock apart from its peers' is this node's fault only if those peers
   * agree with each other (their offsets to us within the bound of each
   * other); against one peer, or peers that disagree, it cannot be told.
   */
  private refusalMessage (median: number, apart: number[], out: number, measured: number, worstAhead: number, hlcAheadMs: number): string {
    const bound = this.opts.maxClockOffsetMs
    if (worstAhead > 0 && Math.abs(median) <= bound) {
      return `this node's clock is in bound but its last version is ${Math.round(hlcAheadMs)} ms ahead of it, past what its peers accept: writes resume in about ${Math.ceil(worstAhead / 1000)} s`
    }
    const by = Math.round(Math.abs(median))
    const side = median > 0 ? 'ahead of' : 'behind'
    if (apart.length >= 2 && Math.max(...apart) - Math.min(...apart) <= bound) {
      return `this node's clock is off by about ${by} ms (${side} ${out} of its ${measured} peers, whose clocks agree with each other; bound ±${bound} ms): writes resume once it is corrected`
    }
    const whom = measured === 1 ? 'its peer\'s' : `${out} of its ${measured} peers'`
    return `this node's clock and ${whom} disagree by about ${by} ms (bound ±${bound} ms; which clock is off cannot be told from here): writes resume once they agree`
  }
}
