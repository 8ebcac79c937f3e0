/**
 * The Dockerfile, read with a Dockerfile parser (no Docker engine runs on
 * the development machines): a builder stage that compiles better-sqlite3
 * and installs production dependencies only, a runtime stage on the same
 * Node 20 image with a non-root user, the volumes, ports, healthcheck and
 * entrypoint the code expects; and nothing the runtime imports is a dev
 * dependency (the image has none).
 */
import fs from 'node:fs'
import { builtinModules } from 'node:module'
import path from 'node:path'
import { Copy, From, Healthcheck, User } from 'dockerfile-ast'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { OPTIONS } from '../../src/node/index.js'
import { freePort, imageDefaults, readDockerfile, ROOT, stages, execForm } from '../helpers/compose.js'
import { runNodeScript } from '../helpers/node-cli.js'
import { withTimeout } from '../../src/common/index.js'

const instructions = readDockerfile()
const [build, runtime] = stages(instructions)
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string>, dependencies: Record<string, string>,
  devDependencies: Record<string, string> }
const args = (i: { getArgumentsContent: () => string | null }): string => i.getArgumentsContent() ?? ''
const of = (stage: typeof build, keyword: string): typeof build => stage.filter(i => i.getKeyword() === keyword)
const defaultOf = (env: string): string | undefined => OPTIONS.find(o => o.env === env)?.def

describe('Dockerfile', () => {
  it('has a builder stage and a runtime stage, both on Node 20', () => {
    expect(stages(instructions)).toHaveLength(2)
    const froms = instructions.filter((i): i is From => i instanceof From)
    for (const f of froms) {
      expect(f.getImageName()).toBe('node')
      expect(f.getImageTag()).toMatch(/^20(\.|-|$)/)
    }
    // The runtime starts from the base image, not from the builder: nothing of the toolchain comes along.
    expect(froms[1].getImageName()).not.toBe(froms[0].getBuildStage())
  })

  it('compiles better-sqlite3 and installs production dependencies only in the builder', () => {
    const runs = of(build, 'RUN').map(args).join('\n')
    expect(runs).toMatch(/apt-get install[^\n]*python3[^\n]*make[^\n]*g\+\+/)
    expect(runs).toMatch(/npm ci\b[^\n]*--omit=dev/)
    expect(of(build, 'COPY').map(args)).toContain('package.json package-lock.json ./')
    expect(pkg.dependencies['better-sqlite3']).toBeDefined()
  })

  it('copies only the built dependencies, the sources and the web page into the runtime, and installs nothing there', () => {
    const runs = of(runtime, 'RUN').map(args).join('\n')
    expect(runs).not.toMatch(/npm (ci|install)|apt-get install|g\+\+/)
    const fromStage = (c: Copy): string | undefined => c.getFlags().find(f => f.getName() === 'from')?.getValue() ?? undefined
    const copies = runtime.filter((i): i is Copy => i instanceof Copy)
    const fromBuild = copies.filter(c => fromStage(c) !== undefined)
    expect(fromBuild.map(c => [fromStage(c), args(c)])).toEqual([[(build[0] as From).getBuildStage(), '/app/node_modules ./node_modules']])
    const fromContext = [...build, ...runtime].filter((i): i is Copy => i instanceof Copy && fromStage(i) === undefined).map(args)
    for (const needed of ['bin ./bin', 'src ./src', 'ui/dist ./ui/dist']) expect(fromContext).toContain(needed)
    // Every path copied from the build context exists, and .dockerignore does not hide it.
    const ignored = fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n').map(l => l.trim()).filter(l => l !== '' && !l.startsWith('#'))
    for (const c of fromContext) {
      for (const src of c.split(/\s+/).slice(0, -1)) {
        expect(fs.existsSync(path.join(ROOT, src)), src).toBe(true)
        expect(ignored.filter(p => p === src || p === src.split('/')[0]), src).toEqual([])
      }
    }
    expect(fs.readdirSync(path.join(ROOT, 'ui', 'dist'))).toContain('index.html')
  })

  it('runs as a non-root user it creates, with the store and the library on volumes', () => {
    const users = runtime.filter((i): i is User => i instanceof User)
    expect(users).toHaveLength(1)
    const user = args(users[0])
    expect(user).not.toMatch(/^(root|0)(:|$)/)
    expect(of(runtime, 'RUN').map(args).join('\n')).toMatch(new RegExp(`useradd[^\\n]*\\b${user.split(':')[0]}\\b`))
    // The user is in force for what the image runs.
    const idx = (k: string): number => runtime.findIndex(i => i.getKeyword() === k)
    expect(idx('USER')).toBeLessThan(idx('ENTRYPOINT'))
    const { env } = imageDefaults()
    const volumes = (JSON.parse(args(of(runtime, 'VOLUME')[0])) as string[])
    expect(volumes).toContain(path.posix.dirname(env.META_CORE_DB_PATH))
    expect(volumes).toContain(env.FILES_PATH)
  })

  it('exposes the HTTP and p2p ports the node listens on, and checks /health', () => {
    const { env, entrypoint, cmd } = imageDefaults()
    const exposed = of(runtime, 'EXPOSE').map(args).join(' ').split(/\s+/)
    expect(exposed).toContain(env.META_CORE_HTTP_PORT)
    const p2pPort = /\/tcp\/(\d+)$/.exec(defaultOf('META_CORE_P2P_LISTEN') ?? '')?.[1]
    expect(exposed).toContain(p2pPort)
    // A token is needed to listen beyond loopback, so the image's wildcard host makes the operator set one.
    expect(env.META_CORE_HTTP_HOST).toBe('0.0.0.0')

    const hc = runtime.filter((i): i is Healthcheck => i instanceof Healthcheck)
    expect(hc).toHaveLength(1)
    const flags = Object.fromEntries(hc[0].getFlags().map(f => [f.getName(), f.getValue()]))
    expect(Object.keys(flags).sort()).toEqual(['interval', 'retries', 'start-period', 'timeout'])
    expect(hc[0].getSubcommand()?.getValue()).toBe('CMD')
    const check = JSON.parse(args(hc[0]).slice(args(hc[0]).indexOf('['))) as string[]
    expect(check[0]).toBe('node')
    const script = check[1].replace(/^\/app\//, '')
    expect(fs.readFileSync(path.join(ROOT, script), 'utf8')).toContain('/health')

    expect(entrypoint).toEqual(['node', `/app/${pkg.bin['meta-core']}`])
    expect(cmd).toEqual(['start'])
    expect(execForm(of(runtime, 'ENTRYPOINT')[0])).toEqual(entrypoint)
  })

  it('the healthcheck script fails when no node answers', async () => {
    const check = runNodeScript([path.join(ROOT, 'bin', 'healthcheck.js')], { META_CORE_HTTP_PORT: String(await freePort()) })
    expect(await withTimeout(check.exited, 15_000, 'the healthcheck')).toBe(1)
    expect(check.stderr()).toContain('unhealthy')
  })
})

describe('production dependencies', () => {
  it('hold every package the node imports at run time (the image installs no dev dependency)', () => {
    const builtins = new Set(builtinModules)
    const missing = new Set<string>()
    const seen = new Set<string>()
    const files = [...walk(path.join(ROOT, 'src')), ...fs.readdirSync(path.join(ROOT, 'bin')).map(f => path.join(ROOT, 'bin', f))]
    for (const file of files.filter(f => /\.(ts|js)$/.test(f))) {
      for (const spec of runtimeImports(file)) {
        if (spec.startsWith('.') || spec.startsWith('node:') || builtins.has(spec)) continue
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]
        seen.add(name)
        if (pkg.dependencies[name] === undefined) missing.add(`${name} (${path.relative(ROOT, file)})`)
      }
    }
    expect([...missing]).toEqual([])
    // The walk saw the real imports (the launcher's loader among them), not an empty list.
    for (const name of ['tsx', 'fastify', 'better-sqlite3', 'libp2p', 'prom-client']) expect(seen).toContain(name)
  })
})

function walk (dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(e => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]))
}

/** Module specifiers a file loads when it runs: type-only imports and exports are erased, so they do not count. */
function runtimeImports (file: string): string[] {
  const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true)
  const out: string[] = []
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier) && n.importClause?.isTypeOnly !== true) out.push(n.moduleSpecifier.text)
    if (ts.isExportDeclaration(n) && n.moduleSpecifier !== undefined && ts.isStringLiteral(n.moduleSpecifier) && !n.isTypeOnly) out.push(n.moduleSpecifier.text)
    if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] !== undefined &&
      ts.isStringLiteral(n.arguments[0])) out.push(n.arguments[0].text)
    ts.forEachChild(n, visit)
  }
  visit(sf)
  return out
}
