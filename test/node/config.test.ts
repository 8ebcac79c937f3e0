import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ConfigError, OPTIONS, isLoopback, parseConfig, type NodeConfig } from '../../src/node/index.js'
import { loadAddressChecks, parseOptions } from '../../src/node/options.js'
import { tmpDir } from '../helpers/tmp.js'

const CWD = '/srv/mc'
const PEER = '12D3KooWRm8J3iL796zPFi2EtGGtUJn58AG67gcqzMFHZnnsTzqD'
const tmp = tmpDir()
afterAll(() => { tmp.cleanup() })
const SWARM_KEY = path.join(tmp.dir, 'swarm.key')
fs.writeFileSync(SWARM_KEY, `/key/swarm/psk/1.0.0/\n/base16/\n${'0f'.repeat(32)}\n`)

async function cfg (argv: string[], env: Record<string, string> = {}): Promise<NodeConfig> {
  const r = await parseConfig(argv, env, CWD)
  if (r.kind !== 'config') throw new Error('expected a config')
  return r.config
}

async function problems (argv: string[], env: Record<string, string> = {}): Promise<string> {
  try {
    await parseConfig(argv, env, CWD)
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as Error).message
  }
  throw new Error('expected a ConfigError')
}

describe('parseConfig', () => {
  it('uses the agreed defaults', async () => {
    expect(await cfg([])).toEqual({
      dbPath: path.resolve(CWD, 'data/meta-core.db'),
      httpHost: '127.0.0.1',
      httpPort: 9000,
      apiToken: undefined,
      filesPath: path.resolve(CWD, 'files'),
      enableFileWatcher: true,
      rescanIntervalMs: 300_000,
      settleMs: 2000,
      hashConcurrency: 4,
      fullHash: ['sha2-256', 'ipfs'],
      fullHashBytesPerSecond: 67_108_864,
      indexExcludePrefixes: ['categories/newznab/'],
      logLevel: 'info',
      swarmKeyPath: undefined,
      keyPath: path.resolve(CWD, 'data/meta-core.key'),
      p2pListen: ['/ip4/0.0.0.0/tcp/4001'],
      bootstrap: [],
      blockedPeers: [],
      targetPeers: 8,
      crossRegionPeers: 0,
      antiEntropyMs: 15_000,
      gossipD: 6,
      gossipDlo: 4,
      gossipDhi: 12,
      pushWindowMs: 50,
      maxClockDriftMs: 10_000,
      peerBytesPerSecond: 536_870_912,
      peerMaxTransfers: 8,
      cachePath: undefined,
      cacheMaxBytes: 10_737_418_240,
      shutdownTimeoutMs: 5000,
      healthNoPeerMs: 60_000,
      metricsPublic: false,
      nodeName: os.hostname().slice(0, 64),
      invite: undefined,
      mdns: false,
      announce: [],
      upnp: false,
      relay: 'auto',
      relayVia: [],
      relayMaxCircuits: 128,
      relayPeerCircuits: 16,
      relayBytesPerSecond: 134_217_728,
      relayPeerBytesPerSecond: 67_108_864
    })
  })

  it('reads every option from its environment variable and from its flag, the flag winning', async () => {
    const env = {
      META_CORE_DB_PATH: '/db/x.db',
      META_CORE_HTTP_HOST: '0.0.0.0',
      META_CORE_HTTP_PORT: '8080',
      META_CORE_API_TOKEN: 'secret-token',
      FILES_PATH: 'lib',
      ENABLE_FILE_WATCHER: 'false',
      META_CORE_RESCAN_INTERVAL_MS: '60000',
      META_CORE_SETTLE_MS: '0',
      META_CORE_HASH_CONCURRENCY: '2',
      META_CORE_FULL_HASH: 'ipfs',
      META_CORE_FULL_HASH_BYTES_PER_SECOND: '1048576',
      META_CORE_INDEX_EXCLUDE_PREFIXES: 'a/, b/',
      META_CORE_LOG_LEVEL: 'debug',
      META_CORE_SWARM_KEY: SWARM_KEY,
      META_CORE_KEY_PATH: 'keys/id.key',
      META_CORE_P2P_LISTEN: '/ip4/127.0.0.1/tcp/0, /ip6/::1/tcp/0',
      META_CORE_BOOTSTRAP: `/ip4/10.0.0.2/tcp/4001/p2p/${PEER}`,
      META_CORE_BLOCKED_PEERS: PEER,
      META_CORE_TARGET_PEERS: '3',
      META_CORE_CROSS_REGION_PEERS: '1',
      META_CORE_ANTI_ENTROPY_MS: '2000',
      META_CORE_GOSSIP_D: '3',
      META_CORE_GOSSIP_DLO: '2',
      META_CORE_GOSSIP_DHI: '4',
      META_CORE_PUSH_WINDOW_MS: '500',
      META_CORE_MAX_CLOCK_DRIFT_MS: '5000',
      META_CORE_PEER_BYTES_PER_SECOND: '1048576',
      META_CORE_PEER_MAX_TRANSFERS: '2',
      META_CORE_CACHE_PATH: 'cache',
      META_CORE_CACHE_MAX_BYTES: '2097152',
      META_CORE_SHUTDOWN_TIMEOUT_MS: '8000',
      META_CORE_HEALTH_NO_PEER_MS: '5000',
      META_CORE_METRICS_PUBLIC: 'true',
      META_CORE_NODE_NAME: 'living-room',
      META_CORE_MDNS: 'true',
      META_CORE_ANNOUNCE: '/dns4/home.example.org/tcp/4001, /ip4/203.0.113.5/tcp/4001',
      META_CORE_UPNP: 'yes',
      META_CORE_RELAY: 'on',
      META_CORE_RELAY_VIA: `/ip4/10.0.0.3/tcp/4001/p2p/${PEER}`,
      META_CORE_RELAY_MAX_CIRCUITS: '10',
      META_CORE_RELAY_PEER_CIRCUITS: '2',
      META_CORE_RELAY_BYTES_PER_SECOND: '1048576',
      META_CORE_RELAY_PEER_BYTES_PER_SECOND: '524288'
    }
    expect(await cfg([], env)).toEqual({
      dbPath: '/db/x.db',
      httpHost: '0.0.0.0',
      httpPort: 8080,
      apiToken: 'secret-token',
      filesPath: path.resolve(CWD, 'lib'),
      enableFileWatcher: false,
      rescanIntervalMs: 60_000,
      settleMs: 0,
      hashConcurrency: 2,
      fullHash: ['ipfs'],
      fullHashBytesPerSecond: 1_048_576,
      indexExcludePrefixes: ['a/', 'b/'],
      logLevel: 'debug',
      swarmKeyPath: SWARM_KEY,
      keyPath: path.resolve(CWD, 'keys/id.key'),
      p2pListen: ['/ip4/127.0.0.1/tcp/0', '/ip6/::1/tcp/0'],
      bootstrap: [`/ip4/10.0.0.2/tcp/4001/p2p/${PEER}`],
      blockedPeers: [PEER],
      targetPeers: 3,
      crossRegionPeers: 1,
      antiEntropyMs: 2000,
      gossipD: 3,
      gossipDlo: 2,
      gossipDhi: 4,
      pushWindowMs: 500,
      maxClockDriftMs: 5000,
      peerBytesPerSecond: 1_048_576,
      peerMaxTransfers: 2,
      cachePath: path.resolve(CWD, 'cache'),
      cacheMaxBytes: 2_097_152,
      shutdownTimeoutMs: 8000,
      healthNoPeerMs: 5000,
      metricsPublic: true,
      nodeName: 'living-room',
      invite: undefined,
      mdns: true,
      announce: ['/dns4/home.example.org/tcp/4001', '/ip4/203.0.113.5/tcp/4001'],
      upnp: true,
      relay: 'on',
      relayVia: [`/ip4/10.0.0.3/tcp/4001/p2p/${PEER}`],
      relayMaxCircuits: 10,
      relayPeerCircuits: 2,
      relayBytesPerSecond: 1_048_576,
      relayPeerBytesPerSecond: 524_288
    })
    const flags = ['--db-path', '/other.db', '--http-host=localhost', '--port', '0', '--api-token=t2', '--files-path', '/f',
      '--enable-file-watcher', '--rescan-interval-ms', '1000', '--settle-ms=5', '--hash-concurrency', '8',
      '--index-exclude-prefixes=', '--log-level', 'warn', '--key-path', '/k', '--p2p-listen', '/ip4/0.0.0.0/tcp/4100',
      '--bootstrap=', '--blocked-peers', '', '--target-peers', '0', '--cross-region-peers', '2', '--anti-entropy-ms', '60000', '--max-clock-drift-ms=0',
      '--gossip-d', '0', '--gossip-dlo=0', '--gossip-dhi', '0', '--push-window-ms', '5',
      '--shutdown-timeout-ms', '1000', '--metrics-public=false', '--node-name', 'attic',
      '--full-hash', 'none', '--full-hash-bytes-per-second=65536', '--health-no-peer-ms', '0',
      '--peer-bytes-per-second', '65536', '--peer-max-transfers=16', '--cache-path', '/c', '--cache-max-bytes', '1048576',
      '--mdns=false', '--announce=', '--upnp', 'off', '--relay', 'off', '--relay-via', '', '--relay-max-circuits', '1', '--relay-peer-circuits=1',
      '--relay-bytes-per-second', '65536', '--relay-peer-bytes-per-second', '65536']
    expect(await cfg(flags, env)).toEqual({
      dbPath: '/other.db',
      httpHost: 'localhost',
      httpPort: 0,
      apiToken: 't2',
      filesPath: '/f',
      enableFileWatcher: true,
      rescanIntervalMs: 1000,
      settleMs: 5,
      hashConcurrency: 8,
      fullHash: [],
      fullHashBytesPerSecond: 65_536,
      indexExcludePrefixes: [],
      logLevel: 'warn',
      swarmKeyPath: SWARM_KEY,
      keyPath: '/k',
      p2pListen: ['/ip4/0.0.0.0/tcp/4100'],
      bootstrap: [],
      blockedPeers: [],
      targetPeers: 0,
      crossRegionPeers: 2,
      antiEntropyMs: 60_000,
      gossipD: 0,
      gossipDlo: 0,
      gossipDhi: 0,
      pushWindowMs: 5,
      maxClockDriftMs: 0,
      peerBytesPerSecond: 65_536,
      peerMaxTransfers: 16,
      cachePath: '/c',
      cacheMaxBytes: 1_048_576,
      shutdownTimeoutMs: 1000,
      healthNoPeerMs: 0,
      metricsPublic: false,
      nodeName: 'attic',
      invite: undefined,
      mdns: false,
      announce: [],
      upnp: false,
      relay: 'off',
      relayVia: [],
      relayMaxCircuits: 1,
      relayPeerCircuits: 1,
      relayBytesPerSecond: 65_536,
      relayPeerBytesPerSecond: 65_536
    })
    // Every option has both spellings.
    for (const o of OPTIONS) {
      expect(o.env ?? '').toMatch(/^[A-Z0-9_]+$/)
      expect(o.flag).toMatch(/^[a-z0-9-]+$/)
    }
  })

  it('starts with a warning, not a failure, when an option older versions had is still set', async () => {
    const warning = /^META_CORE_TOMBSTONE_RETENTION_MS \(--tombstone-retention-ms\) is set but no longer does anything: .*tombstone horizon/
    const byEnv = await cfg([], { META_CORE_TOMBSTONE_RETENTION_MS: '86400000' })
    expect(byEnv.retired).toHaveLength(1)
    expect(byEnv.retired?.[0]).toMatch(warning)
    // As a flag, with its value in the next argument or after `=`: the options around it read as usual.
    for (const flags of [['--tombstone-retention-ms', '60000', '--settle-ms', '5'], ['--tombstone-retention-ms=60000', '--settle-ms', '5']]) {
      const byFlag = await cfg(flags)
      expect(byFlag.retired?.[0]).toMatch(warning)
      expect(byFlag.settleMs).toBe(5)
    }
    expect((await cfg([])).retired).toBeUndefined()
    expect(OPTIONS.some(o => o.env === 'META_CORE_TOMBSTONE_RETENTION_MS')).toBe(false)
  })

  it('treats an empty variable as unset, except the exclude list where empty means none', async () => {
    expect(await cfg([], { META_CORE_HTTP_PORT: '', META_CORE_API_TOKEN: '' })).toMatchObject({ httpPort: 9000, apiToken: undefined })
    expect((await cfg([], { META_CORE_INDEX_EXCLUDE_PREFIXES: '' })).indexExcludePrefixes).toEqual([])
  })

  it('takes the full hash\'s algorithms as a list of known names, or none, and names any other', async () => {
    expect((await cfg(['--full-hash', 'ipfs, sha2-256, ipfs'])).fullHash).toEqual(['ipfs', 'sha2-256'])
    expect((await cfg([], { META_CORE_FULL_HASH: 'none' })).fullHash).toEqual([])
    for (const bad of ['sha1', 'none,ipfs', ',']) {
      expect(await problems(['--full-hash', bad]), bad).toContain('invalid META_CORE_FULL_HASH (--full-hash)')
    }
    expect(await problems(['--full-hash', 'md5'])).toContain('must be a comma-separated list of sha2-256, ipfs, or none')
  })

  it('accepts boolean spellings', async () => {
    expect((await cfg(['--enable-file-watcher', 'false'])).enableFileWatcher).toBe(false)
    expect((await cfg(['--enable-file-watcher', '--port', '1'])).enableFileWatcher).toBe(true)
    expect((await cfg([], { ENABLE_FILE_WATCHER: 'NO' })).enableFileWatcher).toBe(false)
    expect((await cfg([], { ENABLE_FILE_WATCHER: '1' })).enableFileWatcher).toBe(true)
  })

  it('reports every bad value at once, naming the variable, the flag and where the value came from', async () => {
    const msg = await problems(['--port', '70000', '--hash-concurrency=0', '--bogus', 'stray'], {
      META_CORE_LOG_LEVEL: 'loud', ENABLE_FILE_WATCHER: 'maybe', META_CORE_SETTLE_MS: '-1', META_CORE_HTTP_HOST: 'bad host!'
    })
    expect(msg).toContain('invalid META_CORE_HTTP_PORT (--http-port) "70000" from --port: must be an integer from 0 to 65535')
    expect(msg).toContain('META_CORE_HASH_CONCURRENCY (--hash-concurrency) "0" from --hash-concurrency')
    expect(msg).toContain('unknown option --bogus')
    expect(msg).toContain('unexpected argument "stray"')
    expect(msg).toContain('META_CORE_LOG_LEVEL (--log-level) "loud" from META_CORE_LOG_LEVEL: must be one of debug, info, warn, error, silent')
    expect(msg).toContain('ENABLE_FILE_WATCHER (--enable-file-watcher) "maybe"')
    expect(msg).toContain('META_CORE_SETTLE_MS (--settle-ms) "-1"')
    expect(msg).toContain('META_CORE_HTTP_HOST (--http-host) "bad host!"')
    expect(msg.split('\n')).toHaveLength(8)
    expect(await problems(['--port'])).toContain('--port needs a value')
  })

  it('refuses a gossipsub degree gossipsub would refuse (Dlo <= D <= Dhi), naming the three options', async () => {
    const msg = await problems(['--gossip-d', '3'], { META_CORE_GOSSIP_DLO: '4' })
    expect(msg).toMatch(/META_CORE_GOSSIP_DLO.*META_CORE_GOSSIP_D .*META_CORE_GOSSIP_DHI.*Dlo=4, D=3, Dhi=12/)
    expect(await problems(['--gossip-d', '20'])).toMatch(/Dlo <= D <= Dhi/)
    expect((await cfg(['--gossip-d', '2', '--gossip-dlo', '2', '--gossip-dhi', '3'])).gossipD).toBe(2)
  })

  it('refuses a non-loopback address without a token, and never echoes a token', async () => {
    for (const host of ['0.0.0.0', '192.168.1.10', '::', 'example.org']) {
      expect(await problems(['--host', host])).toContain('is not a loopback address: set META_CORE_API_TOKEN (--api-token)')
      expect((await cfg(['--host', host, '--api-token', 'tok'])).httpHost).toBe(host)
    }
    const msg = await problems(['--api-token', 'has space inside'])
    expect(msg).toContain('(value hidden)')
    expect(msg).not.toContain('has space')
  })

  it('checks the mesh options: a readable swarm key, multiaddrs, peer ids, and no p2p option without a key', async () => {
    const bad = path.join(tmp.dir, 'not-a-key')
    fs.writeFileSync(bad, 'hello')
    const msg = await problems(['--swarm-key', bad, '--p2p-listen', '/ip4/1.2.3.4/tcp', '--bootstrap', '/ip4/10.0.0.2/udp/4001', '--blocked-peers', 'nope'])
    expect(msg).toContain('META_CORE_SWARM_KEY (--swarm-key)')
    expect(msg).toContain('is not a swarm key')
    expect(msg).toContain('META_CORE_P2P_LISTEN (--p2p-listen) "/ip4/1.2.3.4/tcp" from --p2p-listen: "/ip4/1.2.3.4/tcp" is not a multiaddr')
    expect(msg).toContain('"/ip4/10.0.0.2/udp/4001" is not a TCP address')
    expect(msg).toContain('"nope" is not a peer id')
    expect(await problems(['--swarm-key', path.join(tmp.dir, 'missing')])).toContain('cannot read it (ENOENT)')
    const standalone = await problems(['--bootstrap', `/ip4/10.0.0.2/tcp/4001/p2p/${PEER}`, '--p2p-listen', '/ip4/127.0.0.1/tcp/0'])
    expect(standalone).toContain('META_CORE_BOOTSTRAP (--bootstrap) needs META_CORE_SWARM_KEY (--swarm-key)')
    expect(standalone).toContain('META_CORE_P2P_LISTEN (--p2p-listen) needs META_CORE_SWARM_KEY (--swarm-key)')
    expect((await cfg(['--swarm-key', SWARM_KEY, '--db-path', '/var/lib/mc/node.sqlite'])).keyPath).toBe('/var/lib/mc/node.key')
    // A bootstrap address may name its peer or leave it to the handshake; a listen address names none.
    const dial = ['/dns4/peer2/tcp/4001', `/ip4/10.0.0.2/tcp/4001/p2p/${PEER}`, '/ip6/::1/tcp/4001']
    expect((await cfg(['--swarm-key', SWARM_KEY, '--bootstrap', dial.join(',')])).bootstrap).toEqual(dial)
    expect(await problems(['--swarm-key', SWARM_KEY, '--p2p-listen', `/ip4/0.0.0.0/tcp/4001/p2p/${PEER}`])).toContain('is not a TCP address')
    expect(await problems(['--swarm-key', SWARM_KEY, '--bootstrap', `/p2p/${PEER}`])).toContain('is not a TCP address')
  })

  it('loads the address checks only for a given multiaddr or peer id, and its defaults pass them', async () => {
    // Without the checks (libp2p's parsers, a third of a second of a start), a standalone node's options parse whole.
    const standalone = parseOptions(OPTIONS, ['--port', '0'], {}, CWD)
    expect(standalone.addressChecksNeeded).toBe(false)
    expect(standalone.problems).toEqual([])
    for (const given of [['--p2p-listen', '/ip4/0.0.0.0/tcp/4001'], ['--bootstrap', 'nope'], ['--blocked-peers', PEER]]) {
      expect(parseOptions(OPTIONS, given, {}, CWD).addressChecksNeeded, given[0]).toBe(true)
    }
    expect(parseOptions(OPTIONS, [], { META_CORE_BOOTSTRAP: 'nope' }, CWD).addressChecksNeeded).toBe(true)
    // An empty list needs none.
    expect(parseOptions(OPTIONS, ['--bootstrap='], {}, CWD).addressChecksNeeded).toBe(false)
    // The defaults are taken without the checks: they must pass them.
    const checks = await loadAddressChecks()
    let defaults = 0
    for (const o of OPTIONS) {
      const list = (o.def ?? '').split(',').map(x => x.trim()).filter(x => x !== '')
      if (o.kind.type === 'multiaddrs') for (const a of list) { expect(checks.multiaddrProblem(a, o.kind.dial), a).toBeUndefined(); defaults++ }
      if (o.kind.type === 'peerids') for (const id of list) { expect(checks.isPeerId(id), id).toBe(true); defaults++ }
    }
    expect(defaults).toBeGreaterThan(0)
  })

  it('prints usage for --help', async () => {
    const r = await parseConfig(['--port', 'x', '--help'], {}, CWD)
    expect(r.kind).toBe('help')
    if (r.kind === 'help') for (const o of OPTIONS) expect(r.text).toContain(o.env)
  })
})

describe('isLoopback', () => {
  it('knows the loopback spellings', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) expect(isLoopback(h), h).toBe(true)
    for (const h of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', 'localhost.example.org', '::ffff:10.0.0.1']) expect(isLoopback(h), h).toBe(false)
  })
})
