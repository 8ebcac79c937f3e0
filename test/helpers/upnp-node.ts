/**
 * A mesh node asking a fake router for a port mapping (META_CORE_UPNP's
 * path through @libp2p/upnp-nat, with the port-mapping client faked: the
 * network edge), run in a network namespace of its own by
 * test/mesh/upnp.test.ts: upnp-nat maps only private, non-loopback
 * addresses, which exist here only inside a namespace.
 *
 *   node --import tsx test/helpers/upnp-node.ts <listen multiaddr> <external ip> <ttl ms>
 *
 * Prints one line of JSON per step: `mapped` (the node's view and its
 * addresses), `renewed` (the router's calls so far), then, on SIGTERM,
 * `stopped` (every call, and the warnings the node logged); with a private
 * external address (a double NAT), `failed` and then `stopped`.
 */
import '../../src/mesh/libp2p/polyfill.js'
import type { Gateway, PortMapping, UPnPNAT } from '@achingbrain/nat-port-mapper'
import { createLogger, waitFor } from '../../src/common/index.js'
import { KvStore } from '../../src/kv/index.js'
import { Libp2pMesh, newSwarmKeyText, parseSwarmKey, prepareIdentity } from '../../src/mesh/libp2p/index.js'
import { RecordStore } from '../../src/records/index.js'

const [listen, external, ttl] = process.argv.slice(2)
const calls: Array<Record<string, unknown>> = []
const say = (o: unknown): void => { process.stdout.write(JSON.stringify(o) + '\n') }
const gateway: Gateway = {
  id: 'fake-router',
  host: '192.168.77.1',
  port: 5000,
  family: 'IPv4',
  externalIp: async () => {
    calls.push({ op: 'externalIp' })
    // Said as it happens, so a test can wait for the router's address to be checked again.
    say({ event: 'checked', checks: calls.filter(c => c.op === 'externalIp').length })
    return external
  },
  map: async (internalPort, internalHost, options) => {
    calls.push({ op: 'map', internalPort, internalHost, ttl: options?.ttl, autoRefresh: options?.autoRefresh, at: Date.now() })
    const m: PortMapping = { externalHost: external, externalPort: internalPort + 10_000, internalHost, internalPort, protocol: 'TCP' }
    return m
  },
  mapAll: async function * () {},
  unmap: async (internalPort) => { calls.push({ op: 'unmap', internalPort }) },
  stop: async () => { calls.push({ op: 'stop' }) }
}
const client: UPnPNAT = {
  findGateways: async function * () { yield gateway },
  getGateway: async () => gateway
}

const lines: string[] = []
const log = createLogger({ level: 'info', name: 'upnp-node', write: (l) => { lines.push(l) } })
const identity = (await prepareIdentity(`/nonexistent/${Math.random()}`)).identity
const kv = new KvStore({ path: ':memory:', backgroundCheckpoint: false })
const mesh = new Libp2pMesh({ records: new RecordStore(kv, { nodeId: identity.peerId }), logger: log }, {
  identity,
  swarmKey: parseSwarmKey(newSwarmKeyText())!,
  listen: [listen],
  bootstrap: [],
  reach: { upnp: { client, ttlMs: Number(ttl), renewBeforeMs: Number(ttl) / 2, checkIntervalMs: 300 } }
})
await mesh.start()
const stop = async (): Promise<void> => {
  await mesh.stop()
  kv.close()
  say({ event: 'stopped', calls, warnings: lines.filter(l => l.includes('WARN')) })
  process.exit(0)
}
process.on('SIGTERM', () => { void stop() })
const upnp = (): { state: string } => mesh.status().reach!.upnp!
try {
  await waitFor(() => upnp().state !== 'searching', { timeoutMs: 20_000, what: 'a mapping or a failure' })
  const s = mesh.status()
  say({ event: upnp().state === 'mapped' ? 'mapped' : 'failed', view: s.reach, addrs: s.self.addrs })
  if (upnp().state === 'mapped') {
    await waitFor(() => calls.filter(c => c.op === 'map').length >= 2, { timeoutMs: 20_000, what: 'the mapping renewed' })
    say({ event: 'renewed', calls })
  }
} catch (err) {
  say({ event: 'error', message: (err as Error).message, lines })
}
