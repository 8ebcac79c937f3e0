import { describe, expect, it } from 'vitest'
import { Prng, Scheduler, parseLatency, InvalidLatencySpecError } from '../../src/mesh/testing/index.js'
import { DEFAULT_NET, Network, type NetConfig } from '../../sim/net/network.js'

interface Harness {
  s: Scheduler
  net: Network
  events: string[]
  sent: Array<{ kind: string, bytes: number }>
  lost: string[]
}

function harness (cfg: Partial<Omit<NetConfig, 'latency'>> & { latency?: string } = {}): Harness {
  const s = new Scheduler()
  const events: string[] = []
  const sent: Harness['sent'] = []
  const lost: string[] = []
  const net = new Network(s, new Prng('net'), { ...DEFAULT_NET, ...cfg, latency: parseLatency(cfg.latency ?? '100') }, {
    sent: (_f, _t, kind, bytes) => { sent.push({ kind, bytes }) },
    lost: (_f, _t, kind, _b, why) => { lost.push(`${kind}:${why}`) }
  })
  net.attach({
    connected: (n, p, d) => { events.push(`${s.now} ${n}+${p} ${d}`) },
    disconnected: (n, p) => { events.push(`${s.now} ${n}-${p}`) }
  })
  return { s, net, events, sent, lost }
}

describe('latency specs', () => {
  it('parses each model and refuses nonsense', () => {
    const r = new Prng('l')
    expect(parseLatency('100').sample(0, 1, r)).toBe(100)
    const u = parseLatency('uniform:50:150')
    for (let i = 0; i < 100; i++) {
      const x = u.sample(0, 1, r)
      expect(x).toBeGreaterThanOrEqual(50)
      expect(x).toBeLessThan(150)
    }
    expect(parseLatency('exp:100').mean(0, 1)).toBe(100)
    const world = parseLatency('regions:world3')
    expect(world.sample(0, 1, r)).toBe(45) // eu → us
    expect(world.sample(0, 3, r)).toBe(1) // both in eu (round robin)
    expect(world.regionOf?.(2)).toBe('ap')
    const custom = parseLatency('regions:a,b|1,20;20,1', 5)
    const x = custom.sample(0, 1, r)
    expect(x).toBeGreaterThanOrEqual(20)
    expect(x).toBeLessThan(25)
    const even = parseLatency('regions:3:80')
    expect(even.sample(0, 1, r)).toBe(80)
    expect(even.sample(0, 3, r)).toBe(1) // both in r1
    expect(even.regionOf?.(5)).toBe('r3')
    expect(parseLatency('regions:2:50:3').sample(1, 3, r)).toBe(3)
    for (const bad of ['', 'fast', 'uniform:9:1', 'exp:-1', 'regions:nowhere', 'regions:a,b|1,2', 'regions:0:80']) {
      expect(() => parseLatency(bad), bad).toThrow(InvalidLatencySpecError)
    }
  })
})

describe('Network', () => {
  it('opens a dialled connection after the handshake and delivers after the link delay', async () => {
    const h = harness({ handshakeRtts: 2 })
    h.net.start(0)
    h.net.start(1)
    h.net.dial(0, 1)
    await h.s.run({ until: 399 })
    expect(h.net.connected(0, 1)).toBe(false)
    await h.s.run({ until: 400 })
    expect(h.net.connected(0, 1)).toBe(true)
    expect(h.events).toEqual(['400 0+1 outbound', '400 1+0 inbound'])
    const at: number[] = []
    expect(h.net.send(0, 1, 'm', 10, () => at.push(h.s.now))).toBe(true)
    expect(h.net.send(0, 2, 'm', 10, () => {})).toBe(false) // no connection: nothing sent
    await h.s.run({ until: 1000 })
    expect(at).toEqual([500])
    expect(h.sent).toEqual([{ kind: 'm', bytes: 10 }])
  })

  it('loses messages between regions only, with --loss-between-regions; queues messages on the receiver\'s downlink', async () => {
    const h = harness({ latency: 'regions:2:50', lossBetweenRegions: 0.5, handshakeRtts: 0 })
    for (const n of [0, 1, 2]) h.net.start(n)
    h.net.dial(0, 1) // r1 → r2
    h.net.dial(0, 2) // both in r1
    await h.s.run({ until: 1 })
    for (let i = 0; i < 200; i++) {
      h.net.send(0, 1, 'between', 10, () => {})
      h.net.send(0, 2, 'inside', 10, () => {})
    }
    await h.s.run({ until: 1000 })
    const lostBetween = h.lost.filter(l => l === 'between:loss').length
    expect(lostBetween).toBeGreaterThan(60)
    expect(lostBetween).toBeLessThan(140)
    expect(h.lost.filter(l => l.startsWith('inside'))).toEqual([])

    const d = harness({ latency: '10', downlinkBps: 8_000, handshakeRtts: 0 }) // 1 byte per ms
    for (const n of [0, 1, 2]) d.net.start(n)
    d.net.dial(0, 2)
    d.net.dial(1, 2)
    await d.s.run({ until: 1 })
    const at: number[] = []
    d.net.send(0, 2, 'm', 100, () => at.push(d.s.now))
    d.net.send(1, 2, 'm', 100, () => at.push(d.s.now))
    await d.s.run({ until: 1000 })
    expect(at.map(Math.round)).toEqual([111, 211]) // the second waits for the first on node 2's downlink
  })

  it('keeps each direction first-in first-out even when later messages draw shorter delays', async () => {
    const h = harness({ latency: 'uniform:10:200', handshakeRtts: 0 })
    h.net.start(0)
    h.net.start(1)
    h.net.dial(0, 1)
    await h.s.run({ until: 1 })
    const got: number[] = []
    for (let i = 0; i < 200; i++) h.net.send(0, 1, 'm', 1, () => got.push(i))
    await h.s.run({ until: 10_000 })
    expect(got).toEqual(Array.from({ length: 200 }, (_, i) => i))
  })

  it('holds each message for the whole delay in serial mode (the in-memory transport\'s latency)', async () => {
    for (const [link, want] of [['pipelined', [100, 100, 100]], ['serial', [100, 200, 300]]] as const) {
      const h = harness({ handshakeRtts: 0, link })
      h.net.start(0)
      h.net.start(1)
      h.net.dial(0, 1)
      await h.s.run({ until: 0 })
      const at: number[] = []
      for (let i = 0; i < 3; i++) h.net.send(0, 1, 'm', 1, () => at.push(h.s.now))
      await h.s.run({ until: 1000 })
      expect(at, link).toEqual(want)
    }
  })

  it('serialises a node\'s uploads on its bandwidth', async () => {
    const h = harness({ latency: '0', handshakeRtts: 0, uplinkBps: 8_000 }) // 1 byte per ms
    for (const n of [0, 1, 2]) h.net.start(n)
    h.net.dial(0, 1)
    h.net.dial(0, 2)
    await h.s.run({ until: 1 })
    const at: number[] = []
    h.net.send(0, 1, 'm', 100, () => at.push(h.s.now))
    h.net.send(0, 2, 'm', 100, () => at.push(h.s.now))
    await h.s.run({ until: 1000 })
    expect(at).toEqual([101, 201])
  })

  it('drops or delays lost transmissions according to the loss mode', async () => {
    for (const mode of ['drop', 'retransmit'] as const) {
      const h = harness({ handshakeRtts: 0, loss: 0.3, lossMode: mode, rtoMs: 200 })
      h.net.start(0)
      h.net.start(1)
      h.net.dial(0, 1)
      await h.s.run({ until: 1 })
      let delivered = 0
      let late = 0
      for (let i = 0; i < 1000; i++) h.net.send(0, 1, 'm', 1, () => { delivered++; if (h.s.now > 1 + 100) late++ })
      await h.s.run({ until: 100_000 })
      if (mode === 'drop') {
        expect(delivered).toBeGreaterThan(600)
        expect(delivered).toBeLessThan(800)
        expect(h.lost.filter(x => x === 'm:loss').length).toBe(1000 - delivered)
      } else {
        expect(delivered).toBe(1000)
        expect(late).toBeGreaterThan(200)
      }
    }
  })

  it('loses messages across a partition and closes connections that stay cut', async () => {
    const h = harness({ handshakeRtts: 0, deadAfterMs: 5_000, redialMinMs: 1_000, redialMaxMs: 1_000 })
    for (const n of [0, 1, 2]) h.net.start(n)
    h.net.want(0, 1)
    h.net.want(0, 2)
    await h.s.run({ until: 10 })
    h.net.partition([[0], [1, 2]])
    let got = 0
    h.net.send(0, 1, 'm', 1, () => { got++ })
    await h.s.run({ until: 4_000 })
    expect(got).toBe(0)
    expect(h.lost).toContain('m:partition')
    expect(h.net.connected(0, 1)).toBe(true) // not yet judged dead
    await h.s.run({ until: 5_100 })
    expect(h.net.connected(0, 1)).toBe(false)
    expect(h.events.some(e => e.endsWith('0-1'))).toBe(true)
    h.net.heal()
    await h.s.run({ until: 9_000 })
    expect(h.net.connected(0, 1)).toBe(true) // redialled with backoff
    expect(h.net.connected(0, 2)).toBe(true)
  })

  it('closes a stopped node\'s connections, loses what was in flight, and redials when it returns', async () => {
    const h = harness({ handshakeRtts: 1, redialMinMs: 500, redialMaxMs: 500 })
    h.net.start(0)
    h.net.start(1)
    h.net.want(1, 0)
    await h.s.run({ until: 300 })
    expect(h.net.connected(0, 1)).toBe(true)
    let got = 0
    h.net.send(1, 0, 'm', 1, () => { got++ })
    h.net.stop(0)
    await h.s.run({ until: 1_000 })
    expect(got).toBe(0)
    expect(h.net.connected(0, 1)).toBe(false)
    // The peer hears of the close after one link delay (the reset crossing the link).
    expect(h.events).toContain('400 1-0')
    h.net.start(0)
    await h.s.run({ until: 3_000 })
    expect(h.net.connected(0, 1)).toBe(true)
  })
})
