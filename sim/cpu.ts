/**
 * The virtual CPU of a node: work is charged to it through a deterministic
 * cost model, runs one task at a time, and a task's effects land when its
 * work is done; a task that arrives while the CPU is busy waits. So queues,
 * lag and "keeps up or not" follow from the load, and report.json stays a
 * function of its inputs (the costs are options, recorded in the report;
 * wall time never enters).
 *
 * Costs (`--cpu-message-ms`, `--cpu-kib-ms`, `--cpu-entry-ms`, all scaled by
 * `--cpu-factor`; 0 turns the CPU off) are calibrated from bench:mesh on
 * this machine (docs/benchmarks.md, 2026-12-01; docs/simulator.md shows the
 * arithmetic): a fresh node took 11.92 s to catch up on 20,000 library
 * records (784,667 keys, 5.2 MB on the wire) from one local peer, and the
 * store applies about 2,500 such records per second in bulk (0.4 ms per
 * record of 39 keys).
 */

export interface CpuCosts {
  /** Per message handled, sent or received: libp2p's decryption, muxing, protobuf and signature check. */
  messageMs: number
  /** Per KiB of message handled, on each side (encryption, compression, decoding). */
  kibMs: number
  /** Per key committed to the store (a local write or an applied entry). */
  entryMs: number
}

export const DEFAULT_CPU_COSTS: Readonly<CpuCosts> = Object.freeze({ messageMs: 0.25, kibMs: 0.4, entryMs: 0.0103 })

export function scaledCosts (c: CpuCosts, factor: number): CpuCosts {
  return { messageMs: c.messageMs * factor, kibMs: c.kibMs * factor, entryMs: c.entryMs * factor }
}

export class VirtualCpu {
  /** Virtual time the CPU is next free at. */
  freeAt = 0
  /** Work charged in all (ms). */
  busyMs = 0
  /** Longest a task waited for the CPU (ms). */
  maxWaitMs = 0

  constructor (private readonly now: () => number) {}

  /** Queues `ms` of work behind what is on the CPU; returns when it is done. */
  charge (ms: number): number {
    const now = this.now()
    const start = Math.max(now, this.freeAt)
    if (start - now > this.maxWaitMs) this.maxWaitMs = start - now
    this.freeAt = start + ms
    this.busyMs += ms
    return this.freeAt
  }

  /** When work charged now would be done: its effects are visible then. */
  doneAt (): number {
    return Math.max(this.now(), this.freeAt)
  }
}
