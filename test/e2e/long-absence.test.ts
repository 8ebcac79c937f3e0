/**
 * A node back from an absence meets a new node first, then its old peer
 * (docs/mesh.md, "Deletes are never forgotten"): three real nodes, each its
 * own `meta-core` process, over TCP on 127.0.0.1. A and B hold 30 records;
 * both stop, for longer than the tombstone horizon each node is started with
 * (META_CORE_TOMBSTONE_RETENTION_MS=5000, an option older versions read as
 * a horizon: a node away past it deleted what a peer lacked; it does nothing
 * now, and the node says so at start); a joiner J starts with one record of
 * its own; A comes back bootstrapped to J, then B bootstrapped to A. Every
 * node ends with every record.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { sleep, waitFor } from '../../src/common/index.js'
import { http, p2pAddrOf, processTestState, startMeshProcess, stopProcess, type MeshProcess } from '../helpers/mesh-processes.js'
import { swarmKeyIn } from '../helpers/mesh-nodes.js'
import { testCid } from '../helpers/record-ops.js'

const state = processTestState('mc-absence-')
const clis = state.clis
afterEach(state.cleanup)

const OLD_HORIZON = { META_CORE_TOMBSTONE_RETENTION_MS: '5000' }
/** Longer than the horizon the option above names. */
const AWAY_MS = 6_000

/** How many of `cids` the node answers with a record. */
async function held (n: MeshProcess, cids: readonly string[]): Promise<number> {
  let k = 0
  for (const cid of cids) if ((await http(n, 'GET', `/api/meta/${cid}`)).status === 200) k++
  return k
}

describe('a node away for longer than the old tombstone horizon', () => {
  it('back, it meets a joiner first and then its old peer: every node ends with every record', async () => {
    const dir = state.dir()
    const key = swarmKeyIn(dir)
    const cids = Array.from({ length: 31 }, (_, i) => testCid(52_000 + i))
    const start = async (name: string, bootstrap: string[] = []): Promise<MeshProcess> => await startMeshProcess(clis,
      { name, dir, key, bootstrap, env: OLD_HORIZON })

    let a = await start('a')
    const firstA = a
    let b = await start('b', [await p2pAddrOf(a)])
    for (const cid of cids.slice(0, 30)) expect((await http(a, 'PATCH', `/meta/${cid}`, { title: `a ${cid}` })).status).toBe(200)
    await waitFor(async () => await held(b, cids.slice(0, 30)) === 30, { timeoutMs: 30_000, what: 'B to hold A\'s 30 records' })

    await stopProcess(a)
    await stopProcess(b)
    await sleep(AWAY_MS) // the absence itself: nothing to wait for, only time to pass
    const j = await start('j')
    expect((await http(j, 'PATCH', `/meta/${cids[30]}`, { title: 'j' })).status).toBe(200)
    a = await start('a', [await p2pAddrOf(j)])
    await waitFor(async () => await held(j, cids) === 31, { timeoutMs: 30_000, what: 'J to hold every record from A' })
    b = await start('b', [await p2pAddrOf(a)])
    await waitFor(async () => {
      for (const n of [a, b, j]) if (await held(n, cids) !== 31) return false
      return true
    }, { timeoutMs: 60_000, what: 'every node to hold all 31 records' })
    const digests = await Promise.all([a, b, j].map(async n => (await http(n, 'GET', '/api/mesh/digest')).body.digest))
    expect(new Set(digests).size).toBe(1)
    // The old option only warned.
    for (const n of [firstA, a, b, j]) expect(n.cli.stdout() + n.cli.stderr(), n.name).toMatch(/META_CORE_TOMBSTONE_RETENTION_MS \(--tombstone-retention-ms\) is set but no longer does anything/)
  }, 240_000)
})
