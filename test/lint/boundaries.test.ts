/**
 * The lint rules encode the layer diagram: each forbidden import below must
 * be reported, each allowed one must pass. Linted with the project's own
 * boundary rules (eslint.config.js), by file path, so folders that do not
 * exist yet (sim/, ui/ for a new file) are covered the same way. And no
 * source file in src/ or sim/ is longer than MAX_LINES, but one.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { ESLint, type Linter } from 'eslint'
import tseslint from 'typescript-eslint'
import { describe, expect, it } from 'vitest'
// @ts-expect-error: the config is plain JavaScript, without type declarations
import { boundaries } from '../../eslint.config.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const eslint = new ESLint({
  cwd: root,
  overrideConfigFile: true,
  overrideConfig: [
    { files: ['**/*.ts', '**/*.tsx'], languageOptions: { parser: tseslint.parser }, plugins: { '@typescript-eslint': tseslint.plugin } },
    ...(boundaries as Linter.Config[])
  ]
})

async function problems (file: string, code: string): Promise<string[]> {
  const [r] = await eslint.lintText(code, { filePath: path.join(root, file) })
  return r.messages.map(m => `${m.ruleId ?? 'parse'}: ${m.message}`)
}

const FORBIDDEN: Array<[file: string, code: string, why: RegExp]> = [
  ['src/kv/x.ts', "import { openNodeStore } from '../records/index.js'", /kv may not import records/],
  ['src/common/x.ts', "import { openKv } from '../kv/index.js'", /common may not import kv/],
  ['src/records/x.ts', "import { createSearch } from '../search/index.js'", /records may not import search/],
  ['src/records/deep/x.ts', "import { buildApp } from '../../api/index.js'", /records may not import api/],
  ['src/api/x.ts', "import { openKv } from '../kv/index.js'", /api may not import kv/],
  ['src/api/routes/x.ts', "import type { KvStore } from '../../kv/index.js'", /api may not import kv/],
  ['src/api/x.ts', "import { createSearch } from '../search/index.js'", /api may not import search code/],
  ['src/watcher/x.ts', "import { RecordReplica } from '../mesh/index.js'", /watcher may not import mesh code/],
  ['src/watcher/x.ts', "import { openKv } from '../kv/index.js'", /watcher may not import kv/],
  ['src/mesh/x.ts', "import { createWatcher } from '../watcher/index.js'", /mesh may not import watcher code/],
  ['src/search/x.ts', "import { startNode } from '../node/index.js'", /search may not import node/],
  ['src/mesh/protocol/x.ts', "import { createLibp2p } from 'libp2p'", /libp2p is imported only in src\/mesh\/libp2p/],
  ['src/mesh/x.ts', "import { gossipsub } from '@libp2p/gossipsub'", /libp2p is imported only/],
  ['src/mesh/libp2p/x.ts', "import { preSharedKey } from '@libp2p/pnet'", /the private network is private-network.ts/],
  ['src/mesh/libp2p/x.ts', "import xsalsa20 from 'xsalsa20'", /the private network is private-network.ts/],
  ['src/node/x.ts', "import { preSharedKey } from '@libp2p/pnet'", /the private network is private-network.ts/],
  ['src/node/x.ts', "import { Libp2pMesh } from '../mesh/libp2p/index.js'", /a standalone node starts without libp2p/],
  ['src/node/deep/x.ts', "import { prepareIdentity } from '../../mesh/libp2p/identity.js'", /a standalone node starts without libp2p/],
  ['src/node/x.ts', "import { createLibp2p } from 'libp2p'", /a standalone node starts without libp2p/],
  ['src/records/x.ts', "import Fastify from 'fastify'", /fastify is imported only in src\/api/],
  ['src/search/x.ts', "import Database from 'better-sqlite3'", /better-sqlite3 is imported only in src\/kv/],
  ['sim/x.ts', "import { createWatcher } from '../src/watcher/index.js'", /sim\/ never loads the watcher/],
  ['sim/deep/x.ts', "import { buildApp } from '../../src/api/index.js'", /sim\/ never loads the watcher or the API/],
  ['sim/x.ts', "import { tcp } from '@libp2p/tcp'", /sim\/ never loads libp2p/],
  ['sim/x.ts', "import { Libp2pMesh } from '../src/mesh/libp2p/index.js'", /sim\/ never loads libp2p/],
  ['sim/x.ts', "import Fastify from 'fastify'", /sim\/ never loads fastify/],
  ['sim/real/x.ts', "import { memory } from '@libp2p/memory'", /sim\/real\/ reaches libp2p only through src\/mesh\/libp2p/],
  ['ui/src/x.ts', "import { parseCid } from '../../src/cid/index.js'", /ui\/ talks to the node over HTTP and SSE only/]
]

/** The other rules of src/: worker code in modules, the mesh's protocol core free of I/O, search's layout in search-schema.ts. */
const FORBIDDEN_CODE: Array<[file: string, code: string, rule: string, why: RegExp]> = [
  ['src/kv/x.ts', "import { Worker } from 'node:worker_threads'\nexport const w = new Worker('postMessage(1)', { eval: true })", 'no-restricted-syntax', /worker code lives in a module of its own/],
  ['src/search/deep/x.ts', "import { Worker } from 'node:worker_threads'\nexport const w = new Worker(`x`, { eval: true, workerData: {} })", 'no-restricted-syntax', /worker code lives in a module/],
  ['src/mesh/protocol/x.ts', "import fs from 'node:fs'\nexport const f = fs", '@typescript-eslint/no-restricted-imports', /src\/mesh\/protocol has no I\/O/],
  ['src/mesh/protocol/x.ts', "import { setTimeout as later } from 'timers/promises'\nexport const f = later", '@typescript-eslint/no-restricted-imports', /has no I\/O/],
  ['src/mesh/protocol/deep/x.ts', 'export function f (): void { setTimeout(() => {}, 10) }', 'no-restricted-globals', /has no I\/O/],
  ['src/mesh/protocol/x.ts', 'export const now = (): number => Date.now()', 'no-restricted-globals', /has no I\/O/],
  ['src/mesh/protocol/x.ts', 'export const d = new Date()', 'no-restricted-globals', /has no I\/O/],
  ['src/mesh/protocol/x.ts', 'export const r = Math.random()', 'no-restricted-syntax', /has no I\/O/],
  ['src/mesh/protocol/x.ts', 'export const t = performance.now()', 'no-restricted-globals', /has no I\/O/],
  ['src/search/x.ts', 'export const key = (rid: string): string => `file:${rid}/title`', 'no-restricted-syntax', /search reads the record layout through search-schema.ts/],
  ['src/search/x.ts', "export const lo = 'idx:roots/'", 'no-restricted-syntax', /through search-schema.ts/],
  ['src/search/x.ts', "export const sql = \"SELECT v FROM kv WHERE k >= 'ver:' \"", 'no-restricted-syntax', /through search-schema.ts/]
]

const ALLOWED: Array<[file: string, code: string]> = [
  ['src/kv/x.ts', "import { silentLogger } from '../common/index.js'\nimport Database from 'better-sqlite3'"],
  ['src/records/x.ts', "import { openKv } from '../kv/index.js'\nimport { isCid } from '../cid/index.js'"],
  ['src/search/x.ts', "import type { KvStore } from '../kv/index.js'\nimport { recordRows } from '../records/index.js'"],
  ['src/api/x.ts', "import type { SearchService } from '../search/types.js'\nimport type { MeshService } from '../mesh/index.js'\nimport type { Watcher } from '../watcher/types.js'\nimport Fastify from 'fastify'"],
  ['src/watcher/x.ts', "import type { Records } from '../records/index.js'\nimport { parseCid } from '../cid/index.js'"],
  ['src/mesh/libp2p/x.ts', "import { createLibp2p } from 'libp2p'\nimport { RecordReplica } from '../replica-store.js'"],
  ['src/node/x.ts', "import { buildApp } from '../api/index.js'\nimport { createWatcher } from '../watcher/index.js'\nimport type { FastifyInstance } from 'fastify'"],
  ['src/node/x.ts', "import type { NodeIdentity } from '../mesh/libp2p/index.js'\nimport { readSwarmKey } from '../mesh/libp2p/swarm-key.js'\nimport { isPeerId } from '../mesh/libp2p/addresses.js'\nimport '../mesh/libp2p/polyfill.js'\nexport const p2p = await import('../mesh/libp2p/index.js')"],
  ['sim/x.ts', "import { KvStore } from '../src/kv/index.js'\nimport { MeshCore } from '../src/mesh/index.js'"],
  ['sim/real/x.ts', "import { Libp2pMesh } from '../../src/mesh/libp2p/index.js'"],
  ['ui/src/x.ts', "import type { RecordDocument } from '../../src/records/index.js'"],
  ['test/x.ts', "import { openKv } from '../src/kv/index.js'\nimport { createLibp2p } from 'libp2p'"],
  ['test/x.ts', "import { Worker } from 'node:worker_threads'\nexport const w = new Worker('1', { eval: true })"],
  ['src/mesh/x.ts', "import { setTimeout as later } from 'node:timers/promises'\nexport const f = (): number => Date.now() + Math.random()\nexport const l = later"],
  ['src/mesh/protocol/x.ts', 'export interface Runtime { now: () => number, random: () => number }\nexport const at = (r: Runtime): number => r.now() + r.random()'],
  ['src/search/search-schema.ts', "export const FILE_PREFIX = 'file:'"],
  ['src/search/x.ts', "import { FILE_PREFIX } from './search-schema.js'\nexport const m = 'search: backlog merged'\nexport const k = FILE_PREFIX"],
  ['src/records/x.ts', "export const k = 'file:'"],
  ['test/helpers/x.ts', "import { preSharedKey } from '@libp2p/pnet'\nimport { privateNetwork } from '../../src/mesh/libp2p/private-network.js'"]
]

describe('import boundaries and source rules (eslint.config.js)', () => {
  it.each(FORBIDDEN)('refuses in %s: %s', async (file, code, why) => {
    const found = await problems(file, code)
    expect(found.some(p => p.startsWith('@typescript-eslint/no-restricted-imports') && why.test(p)), found.join('\n')).toBe(true)
  })

  it.each(FORBIDDEN_CODE)('refuses in %s: %s', async (file, code, rule, why) => {
    const found = await problems(file, code)
    expect(found.some(p => p.startsWith(`${rule}: `) && why.test(p)), found.join('\n')).toBe(true)
  })

  it.each(ALLOWED)('allows in %s: %s', async (file, code) => {
    expect(await problems(file, code)).toEqual([])
  })
})

/** The longest a source file in src/ or sim/ may be (lines, as `wc -l` counts them). */
const MAX_LINES = 450
describe('file length', () => {
  it(`keeps every .ts file in src/ and sim/ within ${MAX_LINES} lines`, () => {
    const files: string[] = []
    const walk = (dir: string): void => {
      for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
        const rel = `${dir}/${e.name}`
        if (e.isDirectory()) walk(rel)
        else if (e.name.endsWith('.ts')) files.push(rel)
      }
    }
    walk('src')
    walk('sim')
    expect(files.length).toBeGreaterThan(100)
    const long = files
      .map(f => [f, fs.readFileSync(path.join(root, f), 'utf8').split('\n').length - 1] as const)
      .filter(([, n]) => n > MAX_LINES)
      .map(([f, n]) => `${f}: ${n} lines`)
    expect(long).toEqual([])
  })
})
