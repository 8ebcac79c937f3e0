/**
 * Lint: the layer diagram as import rules, typescript-eslint's type-aware rules
 * (TYPE_RULES: no floating or misused promises…), and lines of at most 160 characters.
 *
 *   common ← kv ← records ← {search, api, watcher, mesh} ← node
 *
 * (`cid` is a leaf beside `kv`.) Each module may import the values of the
 * modules listed for it in LAYERS and nothing else of src/; the four middle
 * modules may name each other's types (`import type`). Packages stay where
 * the architecture puts them: better-sqlite3 in kv, libp2p in mesh/libp2p
 * (except @libp2p/pnet and its cipher, which no file of src/ loads), fastify
 * in api; src/node/ loads libp2p's stack only with `await import()` (a
 * standalone node starts without it). sim/ may import src/ but never libp2p, fastify, the API or
 * the watcher (its real-stack mode, sim/real/, uses the mesh's libp2p adapter); ui/ imports nothing of src/ at run time (wire types only).
 * Folders that do not exist yet are covered as soon as they appear.
 *
 * Three more rules keep the code as easy to change as its layout promises:
 * no worker code in a string (`eval: true`) anywhere in src/; src/mesh/protocol
 * free of I/O (no Node built-ins, timers, `Date`, `performance`, `Math.random`:
 * its runtime injects them); and src/search naming the record layout's keys
 * only in search-schema.ts.
 *
 * The rules are built from the tables below; test/lint/boundaries.test.ts
 * lints forbidden code against them, so a rule that stops biting fails.
 */
import tseslint from 'typescript-eslint'

/** Module → the modules whose values it may import. */
export const LAYERS = {
  common: [],
  kv: ['common'],
  cid: ['common'],
  records: ['common', 'kv', 'cid'],
  search: ['common', 'kv', 'records', 'cid'],
  api: ['common', 'records', 'cid'],
  watcher: ['common', 'records', 'cid'],
  mesh: ['common', 'records', 'cid'],
  node: ['common', 'kv', 'cid', 'records', 'search', 'api', 'watcher', 'mesh']
}

/** The middle modules: they may name each other's types, never import each other's code. */
const MIDDLE = ['search', 'api', 'watcher', 'mesh']

const LIBP2P = '^(libp2p|@libp2p/.*|@chainsafe/.*|@multiformats/multiaddr)$'
const FASTIFY = '^(fastify|@fastify/.*)$'
const SQLITE = '^better-sqlite3$'
/** @libp2p/pnet and its cipher: tests and benchmarks only (the compatibility checks). */
const STOCK_PNET = '^(@libp2p/pnet|xsalsa20)$'

/** The files of src/mesh/libp2p/ that src/node/ may load at start: option checks and key files, no libp2p stack. */
const NODE_LIGHT_LIBP2P = ['addresses', 'swarm-key', 'errors', 'polyfill']

/** A relative import of module `m` of src/ from anywhere below src/ (`../m/…`, `../../m/…`). */
const moduleImport = (m) => `^(\\.\\./)+${m}/`
/** A relative import of src/ (or a module of it) from outside src/. */
const srcImport = (m = '') => `^(\\.\\./)+src/${m}`

/** Node's built-in modules, by either name: the mesh's protocol core reaches I/O only through its injected runtime. */
const NODE_BUILTINS = '^(node:.*|fs|fs/promises|path|os|net|dgram|http|https|http2|child_process|worker_threads|timers|timers/promises|crypto|process|stream|events|dns|tls|url|util|perf_hooks|cluster|readline|zlib)$'
const PROTOCOL_IO = 'src/mesh/protocol has no I/O: it acts only through its injected runtime ({ send, schedule, now, random }), so the simulator replays it by seed'

function moduleRules (m, { libp2p = false, protocol = false } = {}) {
  const patterns = []
  for (const other of Object.keys(LAYERS)) {
    if (other === m || LAYERS[m].includes(other)) continue
    const types = MIDDLE.includes(m) && MIDDLE.includes(other)
    patterns.push({
      regex: moduleImport(other),
      allowTypeImports: types,
      message: `layers: ${m} may not import ${other}${types ? ' code (its types only, with `import type`)' : ''} (common ← kv ← records ← {search, api, watcher, mesh} ← node)`
    })
  }
  if (!libp2p && m !== 'node') patterns.push({ regex: LIBP2P, message: 'libp2p is imported only in src/mesh/libp2p/' })
  if (m === 'node') {
    // A standalone node starts without libp2p: the mesh stack comes in with `await import()` where a swarm key is set.
    const message = 'a standalone node starts without libp2p: load the mesh stack with `await import()` where it is needed (types with `import type`)'
    patterns.push({ regex: LIBP2P, allowTypeImports: true, message })
    patterns.push({ regex: `${moduleImport('mesh')}libp2p/(?!(${NODE_LIGHT_LIBP2P.join('|')})\\.js$)`, allowTypeImports: true, message })
  }
  patterns.push({ regex: STOCK_PNET, message: 'the private network is private-network.ts: @libp2p/pnet leaks its xsalsa20 ciphers until the process dies (docs/mesh.md, Trust)' })
  if (m !== 'api' && m !== 'node') patterns.push({ regex: FASTIFY, allowTypeImports: m === 'node', message: 'fastify is imported only in src/api/' })
  if (m !== 'kv') patterns.push({ regex: SQLITE, message: 'better-sqlite3 is imported only in src/kv/' })
  if (protocol) patterns.push({ regex: NODE_BUILTINS, message: PROTOCOL_IO })
  return { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] }
}

/**
 * Syntax no file of src/ may use: worker code in a string (`new Worker(source, { eval: true })`), which
 * neither tsc nor eslint reads. A worker is a module of its own, started with common/module-worker.ts.
 */
const SRC_SYNTAX = [
  { selector: "NewExpression[callee.name='Worker'] Property[key.name='eval'][value.value=true]", message: 'worker code lives in a module of its own (common/module-worker.ts: startModuleWorker), not in a string' }
]

/** Key prefixes of the record layout: search names them only through search-schema.ts (its layout contract with records). */
const LAYOUT_KEY = '/(^|[^A-Za-z0-9_.-])(file|ver|cid|idx|dup|ev|evhwm|evlow):/'
const LAYOUT_MESSAGE = "search reads the record layout through search-schema.ts only (FILE_PREFIX, recordKey, ROOTS_LO, GRP_PREFIX…), checked against records by test/search/layout-contract.test.ts"
const SEARCH_SYNTAX = [
  ...SRC_SYNTAX,
  { selector: `Literal[value=${LAYOUT_KEY}]`, message: LAYOUT_MESSAGE },
  { selector: `TemplateElement[value.raw=${LAYOUT_KEY}]`, message: LAYOUT_MESSAGE }
]

/** What the mesh's protocol core may not call: time, timers and randomness come from its runtime. */
const PROTOCOL_SYNTAX = [
  ...SRC_SYNTAX,
  { selector: "MemberExpression[object.name='Math'][property.name='random']", message: PROTOCOL_IO }
]
const PROTOCOL_GLOBALS = ['setTimeout', 'setInterval', 'setImmediate', 'clearTimeout', 'clearInterval', 'clearImmediate', 'queueMicrotask', 'Date',
  'performance', 'process', 'fetch', 'require']
  .map(name => ({ name, message: PROTOCOL_IO }))

/** What no file of sim/ may load. */
const SIM_NEVER = [
  { regex: FASTIFY, message: 'sim/ never loads fastify' },
  { regex: srcImport('(watcher|api)/'), message: 'sim/ never loads the watcher or the API' }
]

/** The boundary rules alone (no type information needed): what the boundary test lints against. */
export const boundaries = [
  ...Object.keys(LAYERS).map(m => ({
    files: [`src/${m}/**/*.ts`],
    rules: moduleRules(m)
  })),
  // The one folder that talks to libp2p.
  { files: ['src/mesh/libp2p/**/*.ts'], rules: moduleRules('mesh', { libp2p: true }) },
  { files: ['src/**/*.ts'], rules: { 'no-restricted-syntax': ['error', ...SRC_SYNTAX] } },
  { files: ['src/search/**/*.ts'], ignores: ['src/search/search-schema.ts'], rules: { 'no-restricted-syntax': ['error', ...SEARCH_SYNTAX] } },
  {
    files: ['src/mesh/protocol/**/*.ts'],
    rules: {
      ...moduleRules('mesh', { protocol: true }),
      'no-restricted-syntax': ['error', ...PROTOCOL_SYNTAX],
      'no-restricted-globals': ['error', ...PROTOCOL_GLOBALS]
    }
  },
  {
    files: ['sim/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [
          { regex: LIBP2P, message: 'sim/ never loads libp2p: it drives the mesh core on a virtual clock' },
          { regex: srcImport('mesh/libp2p/'), message: 'sim/ never loads libp2p' },
          ...SIM_NEVER
        ]
      }]
    }
  },
  // The real-stack mode (sim/real/) runs real nodes: it reaches libp2p only through the mesh module's
  // own adapter, never a libp2p package itself, and the CLI loads it only for --real.
  {
    files: ['sim/real/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [
          { regex: LIBP2P, message: 'sim/real/ reaches libp2p only through src/mesh/libp2p' },
          ...SIM_NEVER
        ]
      }]
    }
  },
  {
    files: ['ui/**/*.ts', 'ui/**/*.tsx'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ regex: srcImport(), allowTypeImports: true, message: 'ui/ talks to the node over HTTP and SSE only: it may name wire types, never load src/' }]
      }]
    }
  }
]

/**
 * The type-aware rules of typescript-eslint's recommended-type-checked set the code meets. Left out: the
 * no-unsafe-* family (member-access, assignment, argument, call, return: about 760 reports, nearly all HTTP and
 * JSON bodies typed `any` in tests) and require-await (76: async functions kept async for the interface they fill).
 * test/lint/rules.test.ts lints a fixture that breaks each.
 */
export const TYPE_RULES = Object.fromEntries([
  // A promise nobody awaits loses its errors and its ordering: await it, return it, or mark it `void` with a reason.
  'no-floating-promises',
  // A promise where a boolean or a void callback is expected: the check is always true, the rejection goes nowhere.
  'no-misused-promises',
  'await-thenable', 'no-array-delete', 'no-base-to-string', 'no-duplicate-type-constituents', 'no-for-in-array', 'no-implied-eval',
  'no-redundant-type-constituents', 'no-unnecessary-type-assertion', 'no-unsafe-enum-comparison', 'no-unsafe-unary-minus', 'only-throw-error',
  'prefer-promise-reject-errors', 'restrict-plus-operands', 'restrict-template-expressions', 'unbound-method'
].map(rule => [`@typescript-eslint/${rule}`, 'error']))

/**
 * Lines of at most 160 characters. A line that holds a string of 40 characters or more is let through: a message
 * or a Markdown line of a report reads (and greps) better whole than cut into pieces.
 */
const LONG_STRING = "(^|[\\s(\\[{,:=+?!&|])('(?:[^'\\\\]|\\\\.){40,}'|\"(?:[^\"\\\\]|\\\\.){40,}\"|`(?:[^`\\\\]|\\\\.){40,}`)"
export const MAX_LEN = { code: 160, ignoreUrls: true, ignoreRegExpLiterals: true, ignorePattern: LONG_STRING }

export default tseslint.config(
  // test/lint/fixtures/ breaks each rule on purpose: test/lint/rules.test.ts lints it with ignores off.
  { ignores: ['node_modules/', 'ui/dist/', '.bench-tmp/', 'coverage/', 'test/lint/fixtures/'] },
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: {
        // test/helpers/browser.ts belongs to test/ui's project, which the nearest-tsconfig lookup does not find.
        projectService: { allowDefaultProject: ['test/helpers/browser.ts'] },
        tsconfigRootDir: import.meta.dirname
      }
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    rules: { ...TYPE_RULES, 'max-len': ['error', MAX_LEN] }
  },
  { files: ['**/*.js', '**/*.mjs'], rules: { 'max-len': ['error', MAX_LEN] } },
  ...boundaries
)
