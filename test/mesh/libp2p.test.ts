/**
 * The libp2p adapter's pieces on their own: the identity key file, swarm
 * keys, and the mesh component's lifecycle (idempotent start and stop, stop
 * before start), on real stores and TCP on 127.0.0.1.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/common/index.js'
import { Libp2pMesh, MeshKeyError, parseSwarmKey, prepareIdentity, readSwarmKey, writeNewSwarmKey } from '../../src/mesh/libp2p/index.js'
import { openNodeStore } from '../../src/records/index.js'
import { tmpDir } from '../helpers/tmp.js'

const t = tmpDir()
afterAll(() => { t.cleanup() })

describe('identity key', () => {
  it('is made in memory, written (0600) only by persist, and read back as the same peer id', async () => {
    const file = path.join(t.dir, 'keys', 'node.key')
    const fresh = await prepareIdentity(file)
    expect(fs.existsSync(file)).toBe(false)
    fresh.persist()
    expect(fs.statSync(file).mode & 0o777).toBe(0o600)
    const again = await prepareIdentity(file)
    expect(again.identity.peerId).toBe(fresh.identity.peerId)
    expect(again.identity.peerId).toMatch(/^12D3KooW/)
    // A second fresh identity never overwrites an existing file.
    const other = await prepareIdentity(path.join(t.dir, 'other.key'))
    fs.copyFileSync(file, path.join(t.dir, 'other.key'))
    expect(() => { other.persist() }).toThrow(MeshKeyError)
    fs.writeFileSync(path.join(t.dir, 'junk.key'), 'not a key')
    await expect(prepareIdentity(path.join(t.dir, 'junk.key'))).rejects.toThrow(/not a libp2p private key/)
  })
})

describe('swarm keys', () => {
  it('writes a new key once, parses it, and names the mesh by a hash of it', () => {
    const file = path.join(t.dir, 'swarm.key')
    writeNewSwarmKey(file)
    expect(() => { writeNewSwarmKey(file) }).toThrow(/already exists/)
    const k = readSwarmKey(file)
    expect(k.meshId).toMatch(/^[0-9a-f]{16}$/)
    expect(new TextDecoder().decode(k.psk)).toBe(fs.readFileSync(file, 'utf8').trimEnd())
    expect(Buffer.from(k.secret).toString('hex')).toBe(fs.readFileSync(file, 'utf8').trim().split('\n')[2])
    expect(parseSwarmKey('/key/swarm/psk/1.0.0/\r\n/base16/\r\n' + 'AB'.repeat(32))!.meshId).toBe(parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${'ab'.repeat(32)}\n`)!.meshId)
    for (const bad of ['', '/key/swarm/psk/1.0.0/\n/base16/\nabc', `/key/swarm/psk/1.0.0/\n/base64/\n${'ab'.repeat(32)}`]) expect(parseSwarmKey(bad)).toBeUndefined()
    fs.writeFileSync(path.join(t.dir, 'bad.key'), 'hello')
    expect(() => readSwarmKey(path.join(t.dir, 'bad.key'))).toThrow(MeshKeyError)
  })
})

describe('Libp2pMesh lifecycle', () => {
  it('starts and stops idempotently, can be stopped before it starts, and refuses a store written with another id', async () => {
    const { identity } = await prepareIdentity(path.join(t.dir, 'life.key'))
    const swarmKey = parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${'cd'.repeat(32)}`)!
    const store = openNodeStore({ path: path.join(t.dir, 'life.db'), nodeId: identity.peerId, backgroundCheckpoint: false })
    try {
      const init = { identity, swarmKey, listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap: [] }
      await new Libp2pMesh({ records: store.records, logger: silentLogger }, init).stop()
      const mesh = new Libp2pMesh({ records: store.records, logger: silentLogger }, init)
      await Promise.all([mesh.start(), mesh.start()])
      expect(mesh.status().self.addrs).toHaveLength(1)
      expect(mesh.gossipDegree()).toEqual({ D: 6, Dlo: 4, Dhi: 12, Dout: 2 }) // gossipsub's own defaults
      await Promise.all([mesh.stop(), mesh.stop()])
      // The node's degree options reach gossipsub, Dout lowered to what its rules allow.
      const sparse = new Libp2pMesh({ records: store.records, logger: silentLogger }, { ...init, degree: { D: 2, Dlo: 2, Dhi: 3 } })
      await sparse.start()
      expect(sparse.gossipDegree()).toEqual({ D: 2, Dlo: 2, Dhi: 3, Dout: 1 })
      await sparse.stop()
      await mesh.stop()
      const other = openNodeStore({ path: path.join(t.dir, 'other.db'), nodeId: 'node-abc', backgroundCheckpoint: false })
      expect(() => new Libp2pMesh({ records: other.records }, init)).toThrow(/mesh identity/)
      other.close()
    } finally {
      store.close()
    }
  })
})
