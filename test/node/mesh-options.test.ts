/**
 * The node's options for reaching other homes (src/node/config.ts): mDNS on
 * with a swarm key unless the node listens on loopback only (so no node on
 * 127.0.0.1, every test's, ever multicasts), the relay's options checked,
 * an invite decoded with its value never shown, and the swarm key and
 * bootstrap list an invite left beside the store used when no key is
 * configured.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { newSwarmKeyText } from '../../src/mesh/libp2p/index.js'
import { ConfigError, parseConfig, type NodeConfig } from '../../src/node/config.js'
import { encodeInvite } from '../../src/node/invite.js'
import { tmpDir } from '../helpers/tmp.js'

const tmp = tmpDir('mc-meshopts-')
afterAll(() => { tmp.cleanup() })
const KEY = path.join(tmp.dir, 'swarm.key')
fs.writeFileSync(KEY, newSwarmKeyText())
const PEER = '12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN'

async function cfg (argv: string[]): Promise<NodeConfig> {
  const r = await parseConfig(['--db-path', path.join(tmp.dir, 'none', 'meta-core.db'), ...argv], {})
  if (r.kind !== 'config') throw new Error('expected a configuration')
  return r.config
}

async function problems (argv: string[]): Promise<string> {
  try {
    await cfg(argv)
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as Error).message
  }
  throw new Error('expected a ConfigError')
}

describe('mesh options for reaching other homes', () => {
  it('turns mDNS on with a swarm key, except for a node that listens on loopback only, and as told', async () => {
    expect((await cfg(['--swarm-key', KEY])).mdns).toBe(true)
    expect((await cfg(['--swarm-key', KEY, '--p2p-listen', '/ip4/192.168.1.20/tcp/4001'])).mdns).toBe(true)
    expect((await cfg(['--swarm-key', KEY, '--p2p-listen', '/ip4/127.0.0.1/tcp/0,/ip6/::1/tcp/0'])).mdns).toBe(false)
    expect((await cfg([])).mdns).toBe(false)
    expect((await cfg(['--swarm-key', KEY, '--mdns=false'])).mdns).toBe(false)
    expect((await cfg(['--swarm-key', KEY, '--p2p-listen', '/ip4/127.0.0.1/tcp/0', '--mdns'])).mdns).toBe(true)
  })

  it('checks the relay options and refuses them without a swarm key', async () => {
    const noId = await problems(['--swarm-key', KEY, '--relay-via', '/ip4/10.0.0.3/tcp/4001', '--relay', 'sometimes'])
    expect(noId).toContain('META_CORE_RELAY_VIA (--relay-via) "/ip4/10.0.0.3/tcp/4001" names no relay: end it in /p2p/')
    expect(noId).toContain('invalid META_CORE_RELAY (--relay) "sometimes" from --relay: must be one of auto, on, off')
    expect(await problems(['--swarm-key', KEY, '--announce', '/ip4/203.0.113.5/udp/4001'])).toContain('META_CORE_ANNOUNCE (--announce) "/ip4/203.0.113.5/udp/4001" from --announce: "/ip4/203.0.113.5/udp/4001" is not a TCP address')
    const standalone = await problems(['--announce', '/dns4/home.example.org/tcp/4001', '--relay-via', `/ip4/10.0.0.3/tcp/4001/p2p/${PEER}`])
    expect(standalone).toContain('META_CORE_ANNOUNCE (--announce) needs META_CORE_SWARM_KEY')
    expect(standalone).toContain('META_CORE_RELAY_VIA (--relay-via) needs META_CORE_SWARM_KEY')
    expect(await problems(['--swarm-key', KEY, '--relay-bytes-per-second', '1000'])).toContain('must be an integer from 65536')
  })

  it('decodes an invite, which stands for a swarm key, and never shows one', async () => {
    const invite = encodeInvite({ keyHex: 'ab'.repeat(32), addrs: [`/ip4/10.0.0.3/tcp/4001/p2p/${PEER}`], name: 'attic' })
    const c = await cfg(['--invite', invite, '--announce', '/dns4/home.example.org/tcp/4001'])
    expect(c.invite).toEqual({ keyHex: 'ab'.repeat(32), addrs: [`/ip4/10.0.0.3/tcp/4001/p2p/${PEER}`], name: 'attic' })
    expect(c.mdns).toBe(true)
    const bad = await problems(['--invite', invite.slice(0, -2)])
    expect(bad).toBe('invalid META_CORE_INVITE (--invite) (value hidden: it holds the mesh\'s key): the invite is cut short: its checksum has 6 of its 8 digits (copy the whole line, up to its last character)')
    expect(bad).not.toContain(invite.slice(19, 40))
  })

  it('uses the swarm key and the bootstrap list an invite left beside the store when no key is configured', async () => {
    const db = path.join(tmp.dir, 'joined', 'meta-core.db')
    fs.mkdirSync(path.dirname(db), { recursive: true })
    const folderKey = path.join(tmp.dir, 'joined', 'meta-core.swarm.key')
    fs.writeFileSync(folderKey, newSwarmKeyText())
    fs.writeFileSync(path.join(tmp.dir, 'joined', 'meta-core.bootstrap'), `# from an invite\n/ip4/10.0.0.3/tcp/4001/p2p/${PEER}\n\n`)
    const c = await cfg(['--db-path', db, '--bootstrap', '/dns4/peer2/tcp/4001'])
    expect(c.swarmKeyPath).toBe(folderKey)
    expect(c.bootstrap).toEqual(['/dns4/peer2/tcp/4001', `/ip4/10.0.0.3/tcp/4001/p2p/${PEER}`])
    // A configured key wins over the folder's, and keeps the folder's list too.
    expect((await cfg(['--db-path', db, '--swarm-key', KEY])).swarmKeyPath).toBe(KEY)
    fs.appendFileSync(path.join(tmp.dir, 'joined', 'meta-core.bootstrap'), '/ip4/10.0.0.4/udp/9\n')
    expect(await problems(['--db-path', db])).toContain(`the bootstrap list ${path.join(tmp.dir, 'joined', 'meta-core.bootstrap')} beside the store: "/ip4/10.0.0.4/udp/9" is not a TCP address`)
    fs.writeFileSync(folderKey, 'not a key')
    expect(await problems(['--db-path', db])).toContain(`${folderKey} beside the store is not a swarm key`)
  })
})
