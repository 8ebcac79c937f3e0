import path from 'node:path'
import { MeshCore, RecordReplica, type MeshOptions, type MeshRuntime } from '../../src/mesh/index.js'
import { VirtualMesh, type VirtualLinkOptions } from '../../src/mesh/testing/index.js'
import { openNodeStore, type NodeStore, type NodeStoreOptions } from '../../src/records/index.js'
import { tmpDir } from './tmp.js'

export interface ClusterNode {
  id: string
  store: NodeStore
  replica: RecordReplica
  core: MeshCore
}

export interface VirtualCluster {
  mesh: VirtualMesh
  nodes: ClusterNode[]
  /** Stops node i's core and starts a new one over the same store (a restart: new frame epoch), links as before. */
  restart: (i: number) => Promise<void>
  /** Stops node i (its core; its links go down): a node away. Its store stays as it was. */
  stop: (i: number) => Promise<void>
  /** Starts node i again (a new core over its store), with no link: connect it as it should come back. */
  start: (i: number) => Promise<void>
  /** Stops node i, closes its store and opens it again (a process restart: the store as on disk), then starts it with no link. */
  reopen: (i: number) => Promise<void>
  /** Digests of every node's replicated range. */
  digests: () => string[]
  close: () => Promise<void>
}

/**
 * `n` real record stores (SQLite files in a temp folder) with a mesh core
 * each, on one virtual mesh whose clock the stores use too. Node ids are
 * `peerA`, `peerB`, … (valid origins). Nothing is connected yet.
 */
export async function virtualCluster (n: number, opts: {
  seed: number
  link?: Partial<VirtualLinkOptions>
  mesh?: Partial<MeshOptions>
  store?: Partial<NodeStoreOptions>
  /** Wraps a node's runtime (to watch what its core sends, say). */
  runtime?: (id: string, rt: MeshRuntime) => MeshRuntime
  /**
   * A node's wall clock offset from virtual time (ms), read on every use, so
   * a test can step it: its store and its core see the offset clock, and the
   * core's monotonic clock stays virtual time.
   */
  skewMs?: (id: string) => number
}): Promise<VirtualCluster> {
  const t = tmpDir('mc-mesh-')
  const mesh = new VirtualMesh({ seed: opts.seed, ...opts.link })
  const nodes: ClusterNode[] = []
  const { skewMs } = opts
  const wall = (id: string): () => number => skewMs === undefined ? mesh.now : () => mesh.now() + skewMs(id)
  const runtimeOf = (id: string): MeshRuntime => {
    const rt = mesh.runtime(id)
    return skewMs === undefined ? rt : { ...rt, now: wall(id), monotonic: mesh.now }
  }
  const makeCore = (id: string, replica: RecordReplica): MeshCore =>
    new MeshCore({ selfId: id, runtime: opts.runtime?.(id, runtimeOf(id)) ?? runtimeOf(id), store: replica, options: opts.mesh })
  const open = (id: string): { store: NodeStore, replica: RecordReplica } => {
    const store = openNodeStore({ ...opts.store, path: path.join(t.dir, `${id}.db`), nodeId: id, now: wall(id), backgroundCheckpoint: false })
    return { store, replica: new RecordReplica(store.records, { newLogId: () => `log-${opts.seed}-${id}` }) }
  }
  for (let i = 0; i < n; i++) {
    const id = `peer${String.fromCharCode(65 + i)}`
    const { store, replica } = open(id)
    const core = makeCore(id, replica)
    mesh.attach(id, core)
    await core.start()
    nodes.push({ id, store, replica, core })
  }
  const stopped = new Set<number>()
  const stop = async (i: number): Promise<void> => {
    if (stopped.has(i)) return
    stopped.add(i)
    mesh.detach(nodes[i].id)
    await nodes[i].core.stop()
  }
  const start = async (i: number): Promise<void> => {
    if (!stopped.delete(i)) return
    const node = nodes[i]
    node.core = makeCore(node.id, node.replica)
    mesh.attach(node.id, node.core)
    await node.core.start()
  }
  return {
    mesh,
    nodes,
    restart: async (i) => {
      const node = nodes[i]
      const peers = nodes.filter(o => mesh.linked(node.id, o.id)).map(o => o.id)
      mesh.detach(node.id)
      await node.core.stop()
      node.core = makeCore(node.id, node.replica)
      mesh.attach(node.id, node.core)
      await node.core.start()
      for (const p of peers) mesh.connect(node.id, p)
    },
    stop,
    start,
    reopen: async (i) => {
      await stop(i)
      const node = nodes[i]
      node.store.close()
      Object.assign(node, open(node.id))
      await start(i)
    },
    digests: () => nodes.map(x => x.replica.digest().digest),
    close: async () => {
      for (const x of nodes) await x.core.stop()
      for (const x of nodes) x.store.close()
      t.cleanup()
    }
  }
}
