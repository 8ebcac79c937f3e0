/**
 * A member behind a relay, in a process of its own (run through tsx:
 * `node --import tsx test/helpers/relay-member.ts <relay multiaddr> <secret hex> <protocol>`):
 * it makes a reservation on the relay, prints its relayed address as one
 * line of JSON, and accepts streams of the protocol, which it never reads. A test stops the whole process (SIGSTOP) to have a receiver that
 * reads nothing at all, not even its connection to the relay.
 */
import '../../src/mesh/libp2p/polyfill.js'
import { circuitRelayTransport } from '@libp2p/circuit-relay-v2'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { identify } from '@libp2p/identify'
import { noise } from '@libp2p/noise'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p } from 'libp2p'
import { waitFor } from '../../src/common/index.js'
import { privateNetwork } from '../../src/mesh/libp2p/private-network.js'

const [relayAddr, secretHex, protocol] = process.argv.slice(2)
const node = await createLibp2p({
  privateKey: await generateKeyPair('Ed25519'),
  addresses: { listen: ['/ip4/127.0.0.1/tcp/0', '/p2p-circuit'] },
  transports: [tcp(), circuitRelayTransport()],
  connectionEncrypters: [noise()],
  streamMuxers: [yamux()],
  connectionProtector: privateNetwork({ secret: Buffer.from(secretHex, 'hex') }),
  services: { identify: identify() }
})
await node.handle(protocol, () => {}, { maxInboundStreams: 1024 })
await node.dial(multiaddr(relayAddr))
const circuit = (): string | undefined => node.getMultiaddrs().map(String).find(a => a.includes('/p2p-circuit'))
await waitFor(() => circuit() !== undefined, { timeoutMs: 10_000, what: 'a reservation on the relay' })
process.stdout.write(JSON.stringify({ circuit: circuit() }) + '\n')
process.on('SIGTERM', () => { void Promise.resolve(node.stop()).finally(() => process.exit(0)) })
