/**
 * Helpers for the tests and the benchmark of file bytes between nodes: the
 * environment of a `meta-core` process in a mesh on 127.0.0.1, and reading
 * a response body in two parts (with something done between them, such as
 * killing the node that sends it).
 */
import path from 'node:path'

/** Environment for `meta-core` with its folder in `dir`, in the mesh of `swarmKey`, watcher off, on 127.0.0.1. */
export function meshCliEnv (dir: string, swarmKey: string, bootstrap?: string): Record<string, string> {
  return {
    META_CORE_DB_PATH: path.join(dir, 'db', 'meta-core.db'),
    FILES_PATH: path.join(dir, 'files'),
    META_CORE_HTTP_HOST: '127.0.0.1',
    META_CORE_HTTP_PORT: '0',
    META_CORE_SWARM_KEY: swarmKey,
    META_CORE_P2P_LISTEN: '/ip4/127.0.0.1/tcp/0',
    ENABLE_FILE_WATCHER: 'false',
    META_CORE_ANTI_ENTROPY_MS: '1000',
    META_CORE_LOG_LEVEL: 'warn',
    ...(bootstrap === undefined ? {} : { META_CORE_BOOTSTRAP: bootstrap })
  }
}

/** Reads `res`'s body: at least `firstBytes`, then `between()`, then the rest; the whole body. */
export async function readAcross (res: Response, firstBytes: number, between: () => Promise<void>): Promise<Buffer> {
  const reader = res.body!.getReader()
  const parts: Uint8Array[] = []
  let got = 0
  let done = false
  while (!done && got < firstBytes) {
    const r = await reader.read()
    done = r.done
    if (r.value !== undefined) { parts.push(r.value); got += r.value.length }
  }
  await between()
  while (!done) {
    const r = await reader.read()
    done = r.done
    if (r.value !== undefined) parts.push(r.value)
  }
  return Buffer.concat(parts)
}
