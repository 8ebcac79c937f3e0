/**
 * The page on a library the size of the original's: first contentful paint
 * and time to the first page of results, on a node serving 169k records
 * (issue target: the page loads in under 1 s). Large, so behind a flag:
 *
 *   META_CORE_UI_PERF=1 flock /work/.bench.lock npx vitest run test/ui/browser-perf.test.ts
 *
 * The store is built once from the bench tools' synthetic records
 * (bench/lib/synthetic.ts) through the record write path with search
 * attached, and cached under .bench-tmp/ (about 7 minutes on this machine).
 * META_CORE_UI_PERF_RECORDS changes the size. Prints JSON and rewrites the
 * `ui` section of docs/benchmarks.md.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser } from 'playwright-core'
import { syntheticRecord } from '../../bench/lib/synthetic.js'
import { machineLine, percentile, report } from '../../bench/lib/report.js'
import { silentLogger } from '../../src/common/index.js'
import { parseConfig, startNode, type RunningNode } from '../../src/node/index.js'
import { openNodeStore } from '../../src/records/index.js'
import { createSearch } from '../../src/search/index.js'
import { HAVE_CHROMIUM, launchBrowser } from '../helpers/browser.js'

const ENABLED = process.env.META_CORE_UI_PERF === '1'
const N = Number(process.env.META_CORE_UI_PERF_RECORDS ?? 169_000)
const ROUNDS = 7
const WRITERS = 16
const TARGET_FCP_MS = 1000
const ROOT = path.resolve(import.meta.dirname, '../..')
const DIR = path.join(ROOT, '.bench-tmp', `ui-${N}-v1`)

async function buildStore (dbPath: string): Promise<{ cached: boolean, seconds: number }> {
  if (fs.existsSync(dbPath)) {
    const s = openNodeStore({ path: dbPath })
    const n = s.records.countRecords()
    s.close()
    if (n === N) return { cached: true, seconds: 0 }
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(dbPath + suffix, { force: true })
  }
  fs.mkdirSync(path.dirname(dbPath), { recursive: true })
  const t0 = Date.now()
  const s = openNodeStore({ path: dbPath, nodeId: 'ui-perf' })
  const search = createSearch({ kv: s.kv, records: s.records })
  await search.start()
  let next = 0
  let last = Date.now()
  const worker = async (): Promise<void> => {
    while (next < N) {
      const r = syntheticRecord(next++)
      await s.records.mergeFlat(r.cid, r.fields)
      if (Date.now() - last > 10_000) {
        last = Date.now()
        process.stderr.write(`ui perf store: ${next} / ${N} records (${Math.round(next / ((Date.now() - t0) / 1000))}/s)\n`)
      }
    }
  }
  await Promise.all(Array.from({ length: WRITERS }, worker))
  await search.whenReady?.()
  await search.stop?.()
  s.close()
  return { cached: false, seconds: Math.round((Date.now() - t0) / 1000) }
}

describe.skipIf(!HAVE_CHROMIUM || !ENABLED)(`web page on ${N.toLocaleString('en')} records`, () => {
  let browser: Browser
  let node: RunningNode
  let build: { cached: boolean, seconds: number }

  beforeAll(async () => {
    build = await buildStore(path.join(DIR, 'meta-core.db'))
    const r = await parseConfig(['--port', '0', '--db-path', path.join(DIR, 'meta-core.db'), '--files-path', path.join(DIR, 'files'),
      '--enable-file-watcher=false'], {})
    if (r.kind !== 'config') throw new Error('config')
    ;[browser, node] = await Promise.all([launchBrowser(), startNode(r.config, { logger: silentLogger })])
  }, 1_800_000)
  afterAll(async () => {
    await browser?.close()
    await node?.stop()
  })

  it(`paints in under ${TARGET_FCP_MS} ms (first contentful paint, cold browser cache)`, async () => {
    const measure = async (url: string, summary: string): Promise<{ fcp: number, results: number }> => {
      const ctx = await browser.newContext() // a fresh cache and storage each round
      const page = await ctx.newPage()
      await page.goto(url)
      await page.waitForFunction(() => document.querySelector('#results tbody tr') !== null, undefined, { polling: 'raf', timeout: 30_000 })
      const t = await page.evaluate(() => ({
        fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN,
        results: performance.now()
      }))
      expect(await page.locator('.summary').textContent()).toContain(summary)
      await ctx.close()
      return t
    }
    const home: Array<{ fcp: number, results: number }> = []
    const search: Array<{ fcp: number, results: number }> = []
    for (let i = 0; i < ROUNDS; i++) {
      home.push(await measure(`${node.url}/`, `of ${N.toLocaleString('en')} records`))
      search.push(await measure(`${node.url}/?q=${encodeURIComponent('year:=1999')}`, 'matches'))
    }
    const med = (xs: number[]): number => Math.round(percentile(xs, 50))
    const figures = {
      records: N,
      rounds: ROUNDS,
      library: { fcpMs: med(home.map(x => x.fcp)), fcpMaxMs: Math.round(Math.max(...home.map(x => x.fcp))), resultsMs: med(home.map(x => x.results)) },
      search: { query: 'year:=1999', fcpMs: med(search.map(x => x.fcp)), resultsMs: med(search.map(x => x.results)) },
      storeBuild: build
    }
    /* eslint-disable max-len -- docs/benchmarks.md as it reads: a paragraph or table row is one line */
    report('ui', figures, `
## Web page

${machineLine()}. A node (watcher off) serving ${N.toLocaleString('en')} synthetic records (bench/lib/synthetic.ts); headless Chromium
(Debian's package) on the same two cores, a fresh browser context (cold cache) per load, median of ${ROUNDS} loads each.
\`META_CORE_UI_PERF=1 npx vitest run test/ui/browser-perf.test.ts\`. ${build.cached ? 'Store reused from .bench-tmp/.' : `Store built in ${build.seconds} s.`}

| page | first contentful paint | first page of results shown |
|---|---|---|
| \`/\` (the library, ${N.toLocaleString('en')} records, true total) | ${figures.library.fcpMs} ms (worst ${figures.library.fcpMaxMs} ms) | ${figures.library.resultsMs} ms |
| \`/?q=year:=1999\` (a field filter) | ${figures.search.fcpMs} ms | ${figures.search.resultsMs} ms |

First contentful paint is the page's static shell (header and a loading line, in index.html) painting
before the script runs; the second column is when the first page of results, with the true total, is on
screen (the script loaded, the search answered, the table rendered). Target (issue 12): first contentful
paint under ${TARGET_FCP_MS} ms on a 169k-record node; the test also holds the second column to it.
`)
    /* eslint-enable max-len */
    expect(figures.library.fcpMs).toBeLessThan(TARGET_FCP_MS)
    expect(figures.search.fcpMs).toBeLessThan(TARGET_FCP_MS)
    expect(figures.library.resultsMs).toBeLessThan(TARGET_FCP_MS)
    expect(figures.search.resultsMs).toBeLessThan(TARGET_FCP_MS)
  }, 300_000)
})
