/**
 * bench:join's logic beside its measurements: which phases JOIN_ONLY picks,
 * how two copies are made to differ (figure 3), the sustained figure's
 * keep-up rule (lag, backlog growth), and the byte-counting relay the
 * meetings go through (real TCP on 127.0.0.1).
 */
import net from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { divergence } from '../../bench/lib/join-data.js'
import { PHASES, parsePhases } from '../../bench/lib/join-report.js'
import { analyseStep, backlogAt, highestKeptUp, lastSeen, slope, type StepInput } from '../../bench/lib/sustained-steps.js'
import { TcpMeter } from '../../bench/lib/tcp-meter.js'

describe('JOIN_ONLY', () => {
  it('runs every phase when unset or empty, the named ones in the benchmark\'s order otherwise', () => {
    expect(parsePhases(undefined)).toEqual([...PHASES])
    expect(parsePhases(' ')).toEqual([...PHASES])
    expect(parsePhases('sustained, fresh,missed')).toEqual(['fresh', 'missed', 'sustained'])
  })

  it('refuses a phase it does not know, naming it', () => {
    expect(() => parsePhases('fresh,eqaul')).toThrow(/eqaul/)
  })
})

describe('figure 3\'s divergence', () => {
  it('changes 1 % of the records, each by one kind of change, spread over the range; new records on each side of their own', () => {
    const n = 20_000
    const d = divergence(n)
    expect(d.records).toBeGreaterThanOrEqual(195)
    expect(d.records).toBeLessThanOrEqual(205)
    const touched = [...d.a.edits, ...d.b.edits, ...d.a.concurrent, ...d.a.deletes, ...d.b.fieldDeletes]
    expect(new Set(touched).size).toBe(touched.length)
    expect(touched.every(i => i >= 0 && i < n)).toBe(true)
    expect(d.a.concurrent).toEqual(d.b.concurrent)
    expect(d.a.concurrent.length).toBeGreaterThan(0)
    expect(d.a.deletes.length).toBeGreaterThan(0)
    expect(d.b.fieldDeletes.length).toBeGreaterThan(0)
    expect(Math.min(...touched)).toBeLessThan(n / 10)
    expect(Math.max(...touched)).toBeGreaterThan(n * 0.9)
    const created = [...d.a.creates, ...d.b.creates]
    expect(created.every(i => i >= n)).toBe(true)
    expect(new Set(created).size).toBe(created.length)
    expect(d.a.edits.length + d.b.edits.length + d.a.concurrent.length + d.a.deletes.length + d.b.fieldDeletes.length + created.length).toBe(d.records)
  })

  it('changes at least 10 records of a small store', () => {
    expect(divergence(300).records).toBeGreaterThanOrEqual(10)
    expect(() => divergence(5)).toThrow(/too few/)
  })
})

/** A step of `seconds` at `rate` on 3 nodes; write k reaches the last node `lag(k)` ms after it is issued (undefined: never). */
function step (rate: number, seconds: number, lag: (k: number) => number | undefined, issuedShare = 1): StepInput {
  const start = 1_000_000
  const issued: Array<[number, number, number]> = []
  const seen = [new Map<number, number>(), new Map<number, number>(), new Map<number, number>()]
  const count = Math.round(rate * seconds * issuedShare)
  for (let k = 0; k < count; k++) {
    const at = start + k * 1000 / (rate * issuedShare)
    issued.push([k, at, k % 3])
    const l = lag(k)
    if (l === undefined) continue
    seen[k % 3].set(k, at + 1)
    seen[(k + 1) % 3].set(k, at + l / 2)
    seen[(k + 2) % 3].set(k, at + l)
  }
  return { rate, start, end: start + seconds * 1000, issued, failed: 0, seen }
}

describe('the sustained figure\'s keep-up rule', () => {
  it('a steady lag keeps up: lag from the call to the last node, the writer\'s own commit apart', () => {
    const r = analyseStep(step(500, 20, () => 120))
    expect(r.keptUp).toBe(true)
    expect(r.why).toEqual([])
    expect(r.lagMs.p50).toBe(120)
    expect(r.lagMs.max).toBe(120)
    expect(r.localLagMs.p50).toBe(1)
    expect(Math.abs(r.backlogGrowthPerSecond)).toBeLessThan(2)
    expect(r.missing).toBe(0)
  })

  it('a lag that grows through the step is a growing backlog, even while its p99 stays under the bound', () => {
    // The last node applies 460 of the 500 records/s offered: the lag grows by 80 ms every second.
    const r = analyseStep(step(500, 20, k => 50 + (k / 500) * 80))
    expect(r.lagMs.p99).toBeLessThan(2_000)
    expect(r.backlogGrowthPerSecond).toBeGreaterThan(25)
    expect(r.lagLastThirdMs).toBeGreaterThan(r.lagFirstThirdMs)
    expect(r.keptUp).toBe(false)
    expect(r.why.join()).toMatch(/backlog grows/)
  })

  it('writes that never reached every node, a lag over the bound, or writers that could not issue the rate do not keep up', () => {
    const lost = analyseStep(step(200, 10, k => k % 50 === 0 ? undefined : 100))
    expect(lost.missing).toBe(40)
    expect(lost.why.join()).toMatch(/40 writes not on every node/)
    expect(analyseStep(step(200, 10, () => 2_500)).why.join()).toMatch(/p99 2500 ms over 2000 ms/)
    expect(analyseStep(step(200, 10, () => 100, 0.8)).why.join()).toMatch(/issued 160\/s of 200\/s/)
  })

  it('counts the backlog at a moment as the writes issued by then and not yet on every node', () => {
    const s = step(10, 1, k => (k < 5 ? 50 : undefined))
    const last = lastSeen(s.issued, s.seen)
    expect(last.get(0)).toBe(s.start + 50)
    expect(last.get(7)).toBeUndefined()
    expect(backlogAt(s.start + 10, s.issued, last)).toBe(1)
    expect(backlogAt(s.start + 60, s.issued, last)).toBe(0)
    expect(backlogAt(s.start + 1_000, s.issued, last)).toBe(5)
    expect(slope([0, 1, 2, 3], [1, 3, 5, 7])).toBe(2)
    expect(slope([1], [1])).toBe(0)
  })

  it('the highest rate kept up is the last of an unbroken run from the lowest', () => {
    expect(highestKeptUp([{ offeredRate: 500, keptUp: true }, { offeredRate: 250, keptUp: true }, { offeredRate: 1000, keptUp: false },
      { offeredRate: 2000, keptUp: true }])).toBe(500)
    expect(highestKeptUp([{ offeredRate: 250, keptUp: false }])).toBeNull()
    expect(highestKeptUp([])).toBeNull()
  })
})

describe('the byte-counting relay', () => {
  const closers: Array<() => Promise<void>> = []
  afterEach(async () => { for (const c of closers.splice(0).reverse()) await c() })

  /** A target server on 127.0.0.1 with `onConnection`, and a relay to it: the relay and its port. */
  async function relayTo (onConnection: (s: net.Socket) => void): Promise<{ meter: TcpMeter, port: number }> {
    const target = net.createServer(onConnection)
    await new Promise<void>(resolve => { target.listen(0, '127.0.0.1', resolve) })
    closers.push(async () => { await new Promise<void>(resolve => { target.close(() => { resolve() }) }) })
    const meter = new TcpMeter((target.address() as net.AddressInfo).port)
    const port = await meter.listen()
    closers.push(async () => { await meter.stop() })
    return { meter, port }
  }

  it('holds a connection until it opens, then relays both ways and counts each way\'s bytes', async () => {
    // The target replies to each chunk with twice its bytes.
    const { meter, port } = await relayTo(s => { s.on('data', (b: Buffer) => { s.write(Buffer.concat([b, b])) }) })

    const c = net.connect(port, '127.0.0.1')
    closers.push(async () => { c.destroy() })
    let got = 0
    c.on('data', (b: Buffer) => { got += b.length })
    await new Promise<void>(resolve => { c.once('connect', () => { resolve() }) })
    c.write(Buffer.alloc(1000, 1))
    // The relay has the bytes, and keeps them: nothing reached the target, so nothing came back.
    await waitFor(() => meter.heldBytes === 1000, { timeoutMs: 5_000, what: 'the relay to hold what was sent' })
    expect(got).toBe(0)
    expect(meter.connections).toBe(0)
    expect(meter.firstConnectedAt).toBeNull()

    meter.open()
    await waitFor(() => got === 2000, { timeoutMs: 5_000, what: 'the reply through the relay' })
    c.write(Buffer.alloc(300, 2))
    await waitFor(() => got === 2600, { timeoutMs: 5_000, what: 'the second reply' })
    expect(meter.toTarget).toBe(1300)
    expect(meter.fromTarget).toBe(2600)
    expect(meter.bytes).toBe(3900)
    expect(meter.connections).toBe(1)
    expect(meter.firstConnectedAt).not.toBeNull()

    meter.reset()
    expect(meter.bytes).toBe(0)
    await waitFor(() => c.destroyed || c.readableEnded, { timeoutMs: 5_000, what: 'the relayed connection to be cut' })
  })

  it('drops a held connection its node gave up on instead of relaying it when it opens', async () => {
    let accepted = 0
    const { meter, port } = await relayTo(s => { accepted++; s.resume() })
    const c = net.connect(port, '127.0.0.1')
    await new Promise<void>(resolve => { c.once('connect', () => { resolve() }) })
    c.end(Buffer.from('hello'))
    await waitFor(() => c.closed, { timeoutMs: 5_000, what: 'the relay to drop the given-up connection' })
    meter.open()
    const d = net.connect(port, '127.0.0.1')
    closers.push(async () => { d.destroy() })
    d.write(Buffer.from('again'))
    await waitFor(() => meter.connections === 1 && meter.toTarget === 5, { timeoutMs: 5_000, what: 'the live connection relayed' })
    expect(accepted).toBe(1)
  })
})
