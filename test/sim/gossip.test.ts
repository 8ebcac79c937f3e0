/**
 * The gossipsub model on its own: routers on the simulated network with an
 * application that accepts (or rejects) every message and records what it
 * got. These check the shape the model must share with the real router.
 */
import { describe, expect, it } from 'vitest'
import { Prng, Scheduler, parseLatency } from '../../src/mesh/testing/index.js'
import { GOSSIPSUB_DEFAULTS, checkGossipConfig, InvalidGossipConfigError, type GossipConfig } from '../../sim/gossip/config.js'
import { GossipRouter } from '../../sim/gossip/router.js'
import type { GossipMessage, Verdict } from '../../sim/gossip/rpc.js'
import { messageBytes, rpcBytes, framedBytes, MSG_ID_BYTES } from '../../sim/gossip/wire-size.js'
import { DEFAULT_NET, Network } from '../../sim/net/network.js'

const TOPIC = 't'

interface Mesh {
  s: Scheduler
  net: Network
  routers: GossipRouter[]
  delivered: Array<Map<number, number>>
  sent: Map<string, number>
  duplicates: number
  verdictOf: (node: number, msg: GossipMessage) => Verdict
}

function mesh (n: number, opts: { degree: number, gossip?: Partial<GossipConfig>, seed?: string, latency?: string,
  verdict?: (node: number, msg: GossipMessage) => Verdict }): Mesh {
  const s = new Scheduler()
  const rng = new Prng(opts.seed ?? 'g')
  const sent = new Map<string, number>()
  const m: Mesh = { s, net: undefined as unknown as Network, routers: [], delivered: [], sent, duplicates: 0, verdictOf: opts.verdict ?? (() => 'accept') }
  const net = new Network(s, rng.fork('net'), { ...DEFAULT_NET, latency: parseLatency(opts.latency ?? '50'), handshakeRtts: 1 }, {
    sent: (_f, _t, kind) => { sent.set(kind, (sent.get(kind) ?? 0) + 1) },
    lost: () => {}
  })
  m.net = net
  let ids = 0
  const cfg = checkGossipConfig({ ...GOSSIPSUB_DEFAULTS, ...opts.gossip })
  for (let i = 0; i < n; i++) {
    const delivered = new Map<number, number>()
    m.delivered.push(delivered)
    const r: GossipRouter = new GossipRouter({
      index: i,
      rng: rng.fork(`r${i}`),
      now: () => s.now,
      after: (ms, fn) => s.after(ms, fn),
      transmit: (to, rpc, kind, bytes) => net.send(i, to, kind, bytes, () => { m.routers[to].handleRpc(i, rpc) }),
      validate: (msg) => {
        delivered.set(msg.id, (delivered.get(msg.id) ?? 0) + 1)
        return m.verdictOf(i, msg)
      },
      onValidateError: (err) => { throw err },
      nextMessageId: () => ++ids,
      stats: { received: () => {}, duplicate: () => { m.duplicates++ }, verdict: () => {} }
    }, cfg)
    m.routers.push(r)
  }
  net.attach({
    connected: (a, b, d) => { m.routers[a].addPeer(b, d) },
    disconnected: (a, b) => { m.routers[a].removePeer(b) }
  })
  const topo = rng.fork('topo')
  for (let i = 0; i < n; i++) {
    net.start(i)
    m.routers[i].start()
    m.routers[i].subscribe(TOPIC)
  }
  for (let i = 0; i < n; i++) for (const p of topo.sample([...Array(n).keys()].filter(x => x !== i), opts.degree)) net.want(i, p)
  return m
}

function data (n: number): Uint8Array {
  return new Uint8Array(n).fill(7)
}

describe('gossipsub model', () => {
  it('forms a mesh with degrees within [Dlo, Dhi] and delivers every message to every node once', async () => {
    const m = mesh(40, { degree: 5 })
    await m.s.run({ until: 5_000 })
    for (const r of m.routers) {
      const d = r.meshPeers(TOPIC).length
      expect(d).toBeGreaterThanOrEqual(GOSSIPSUB_DEFAULTS.Dlo)
      expect(d).toBeLessThanOrEqual(GOSSIPSUB_DEFAULTS.Dhi)
    }
    const published: number[] = []
    for (let k = 0; k < 20; k++) published.push(m.routers[k % 40].publish(TOPIC, data(100)).msg.id)
    await m.s.run({ until: 10_000 })
    for (let i = 0; i < 40; i++) {
      for (const id of published) {
        const own = m.routers[(id - 1) % 40] === m.routers[i]
        // The validator sees each message once per node (seen cache), never at its publisher.
        expect(m.delivered[i].get(id) ?? 0, `node ${i} message ${id}`).toBe(own ? 0 : 1)
      }
    }
    expect(m.duplicates).toBeGreaterThan(0) // a mesh of degree > 2 carries redundant copies
  })

  it('sends each relayed message to mesh peers only: total forwards stay near N × (mesh degree − 1)', async () => {
    const m = mesh(30, { degree: 6, gossip: { floodPublish: false } })
    await m.s.run({ until: 5_000 })
    const degreeSum = m.routers.reduce((a, r) => a + r.meshPeers(TOPIC).length, 0)
    m.sent.clear()
    m.routers[0].publish(TOPIC, data(100))
    await m.s.run({ until: 5_900 }) // before the next heartbeats' IHAVE
    const forwards = m.sent.get('forward') ?? 0
    const publishes = m.sent.get('publish') ?? 0
    expect(publishes).toBe(m.routers[0].meshPeers(TOPIC).length)
    // Each node but the publisher forwards once, to its mesh peers except the one it got the message from.
    expect(forwards).toBeLessThanOrEqual(degreeSum - 29)
    expect(forwards).toBeGreaterThanOrEqual(degreeSum - 2 * 29)
  })

  it('flood-publishes to every subscribed peer when floodPublish is on', async () => {
    const m = mesh(30, { degree: 10, gossip: { D: 3, Dlo: 2, Dhi: 4, Dout: 1 } })
    await m.s.run({ until: 3_000 })
    m.sent.clear()
    const { recipients } = m.routers[5].publish(TOPIC, data(10))
    expect(recipients).toBe(m.net.peersOf(5).length)
    expect(recipients).toBeGreaterThan(m.routers[5].meshPeers(TOPIC).length)
  })

  it('does not forward what the application rejects', async () => {
    const m = mesh(20, { degree: 5, verdict: () => 'reject' })
    await m.s.run({ until: 3_000 })
    m.sent.clear()
    m.routers[0].publish(TOPIC, data(10))
    await m.s.run({ until: 3_900 })
    expect(m.sent.get('forward') ?? 0).toBe(0)
    const reached = m.delivered.filter(d => d.size > 0).length
    expect(reached).toBe(m.net.peersOf(0).length) // only the publisher's direct peers ever saw it
  })

  it('sends IDONTWANT for large messages and skips peers that sent one', async () => {
    // Spread delays: a peer's IDONTWANT can only beat the message it covers when paths differ in length.
    const small = mesh(25, { degree: 6, seed: 'i', latency: 'uniform:5:150' })
    const large = mesh(25, { degree: 6, seed: 'i', latency: 'uniform:5:150' })
    await small.s.run({ until: 4_000 })
    await large.s.run({ until: 4_000 })
    small.sent.clear()
    large.sent.clear()
    for (let k = 0; k < 10; k++) {
      small.routers[k].publish(TOPIC, data(100))
      large.routers[k].publish(TOPIC, data(4_000))
    }
    await small.s.run({ until: 4_900 })
    await large.s.run({ until: 4_900 })
    expect(small.sent.get('idontwant') ?? 0).toBe(0)
    expect(large.sent.get('idontwant') ?? 0).toBeGreaterThan(0)
    expect(large.sent.get('forward') ?? 0).toBeLessThan(small.sent.get('forward') ?? 0)
  })

  it('repairs with IHAVE/IWANT when the mesh does not carry a message', async () => {
    // D = Dlo = Dhi = 1 leaves most nodes outside any mesh path from the publisher: lazy gossip must reach them.
    const m = mesh(12, { degree: 4, gossip: { D: 1, Dlo: 1, Dhi: 1, Dout: 0, Dlazy: 6, floodPublish: false } })
    await m.s.run({ until: 4_000 })
    const { msg } = m.routers[0].publish(TOPIC, data(50))
    await m.s.run({ until: 12_000 })
    expect(m.sent.get('ihave') ?? 0).toBeGreaterThan(0)
    expect(m.sent.get('iwant-reply') ?? 0).toBeGreaterThan(0)
    for (let i = 1; i < 12; i++) expect(m.delivered[i].get(msg.id), `node ${i}`).toBe(1)
  })

  it('checks its parameters as gossipsub does', () => {
    expect(() => checkGossipConfig({ ...GOSSIPSUB_DEFAULTS, Dlo: 7 })).toThrow(InvalidGossipConfigError)
    expect(() => checkGossipConfig({ ...GOSSIPSUB_DEFAULTS, Dout: 4 })).toThrow(InvalidGossipConfigError)
    expect(() => checkGossipConfig({ ...GOSSIPSUB_DEFAULTS, mcacheGossip: 6 })).toThrow(InvalidGossipConfigError)
  })
})

describe('wire sizes', () => {
  it('counts protobuf fields and stream framing', () => {
    // from(38) data seqno(8) topic signature(64), each with a tag and a length byte.
    expect(messageBytes('t', 100)).toBe((2 + 38) + (2 + 100) + (2 + 8) + (2 + 1) + (2 + 64))
    // ControlIHave = topic (1+1+1) + 3 ids (1+1+46 each) = 147; wrapped as a field (1+2+147) inside control, itself a field (1+2+150).
    expect(rpcBytes({ ihave: [{ topic: 't', ids: 3 }] })).toBe(153)
    expect(MSG_ID_BYTES).toBe(46)
    expect(framedBytes(100)).toBe(1 + 100 + 12 + 18)
    expect(framedBytes(200)).toBe(2 + 200 + 12 + 18)
  })
})
