/**
 * Headless Chromium (Debian's `chromium` package) driven by playwright-core,
 * which downloads no browser of its own, plus whole nodes on 127.0.0.1 for
 * the page to talk to. One browser per test file; each test gets a fresh
 * context (its own storage), so tests do not see each other's tokens.
 *
 * Without Chromium the browser tests skip, saying what to install.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { chromium, type Browser, type Page } from 'playwright-core'
import { silentLogger, waitFor } from '../../src/common/index.js'
import { parseConfig, startNode, type NodeConfig, type RunningNode } from '../../src/node/index.js'

export const CHROMIUM_PATH = process.env.META_CORE_CHROMIUM ?? '/usr/bin/chromium'
export const HAVE_CHROMIUM = fs.existsSync(CHROMIUM_PATH)
export const SKIP_MESSAGE = `browser tests skipped: no Chromium at ${CHROMIUM_PATH}. Install Debian's package (apt-get install -y chromium) or set META_CORE_CHROMIUM to a Chromium binary.`
if (!HAVE_CHROMIUM) process.stderr.write(`\n${SKIP_MESSAGE}\n\n`)

/** Screenshots go to docs/ui/ only when asked (npm run screenshots:ui), so a test run leaves the tree clean. */
export const SCREENSHOT_DIR = process.env.META_CORE_UI_SCREENSHOTS === '1'
  ? path.resolve(import.meta.dirname, '../../docs/ui')
  : undefined

const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'
]

export async function launchBrowser (): Promise<Browser> {
  // launch() runs the browser on a fresh temporary profile (--user-data-dir) and removes it on close.
  return await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: FLAGS, timeout: 60_000 })
}

export interface TestNode {
  node: RunningNode
  url: string
  dir: string
  filesPath: string
  /** Stops the node and removes its folder. */
  stop: () => Promise<void>
  /** Stops the node and starts it again on the same folder (store, identity key, files) with these flags; a new port. */
  restart: (flags: string[]) => Promise<TestNode>
}

/** A whole node (store, search, watcher, API and page) on 127.0.0.1 with a free port, in a temp folder. */
export async function startTestNode (flags: string[] = [], setup?: (filesPath: string) => void): Promise<TestNode> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-ui-'))
  fs.mkdirSync(path.join(dir, 'files'), { recursive: true })
  setup?.(path.join(dir, 'files'))
  return await startIn(dir, flags)
}

async function startIn (dir: string, flags: string[]): Promise<TestNode> {
  const filesPath = path.join(dir, 'files')
  let node: RunningNode
  try {
    const r = await parseConfig(['--port', '0', '--host', '127.0.0.1', '--db-path', path.join(dir, 'db', 'm.db'), '--files-path', filesPath, ...flags], {})
    if (r.kind !== 'config') throw new Error('bad test node configuration')
    const config: NodeConfig = r.config
    node = await startNode(config, { logger: silentLogger })
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true })
    throw err
  }
  return {
    node,
    url: node.url,
    dir,
    filesPath,
    async stop () {
      try {
        await node.stop()
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    },
    async restart (next) {
      await node.stop()
      return await startIn(dir, next)
    }
  }
}

/** Fails the test on anything the page logs as an error or throws (a broken page must not pass quietly). */
export function watchPageErrors (page: Page): string[] {
  // A step that cannot happen fails in seconds, naming the step, rather than at the test's deadline.
  page.setDefaultTimeout(10_000)
  const errors: string[] = []
  page.on('pageerror', e => { errors.push(`pageerror: ${e.message}`) })
  page.on('console', m => {
    // 4xx answers the page handles itself (token prompt, "no record here", a refused write shown with the
    // API's message) and a node without a mesh (503) log as failed resource loads.
    if (m.type() === 'error' && !/the server responded with a status of (4\d\d|503)/.test(m.text())) errors.push(`console: ${m.text()}`)
  })
  return errors
}

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

export interface AxeViolation { id: string, impact: string | null, help: string, nodes: string[] }

/**
 * Runs axe-core in the page (injected by the test only: the node never
 * serves it) and returns the serious and critical violations. Evaluated
 * through the DevTools protocol, which the page's CSP does not govern.
 */
export async function seriousA11yViolations (page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE)
  const result = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (ctx: Document, opts: unknown) => Promise<{ violations: Array<{ id: string, impact: string | null,
      help: string, nodes: Array<{ target: unknown[] }> }> }> } }).axe
    const r = await axe.run(document, { resultTypes: ['violations'] })
    return r.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => JSON.stringify(n.target)) }))
  })
  return result.filter(v => v.impact === 'serious' || v.impact === 'critical')
}

export async function screenshot (page: Page, name: string): Promise<void> {
  if (SCREENSHOT_DIR === undefined) return
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true })
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: false })
}

/** JSON over HTTP to a test node, with the token when given. */
export async function api<T = unknown> (url: string, method = 'GET', body?: unknown, token?: string): Promise<{ status: number, json: T }> {
  const headers: Record<string, string> = {}
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  return { status: res.status, json: (text === '' ? undefined : JSON.parse(text)) as T }
}

export { waitFor }
