/**
 * The node panel and the file preview, against a node whose real watcher
 * scans a real folder: the panel shows the scan's progress as the watcher
 * reports it (files seen, hashed, waiting), says the node has no mesh, and
 * a record's small WebM plays in a <video> (metadata loaded: its size and
 * duration).
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser } from 'playwright-core'
import {
  HAVE_CHROMIUM, api, launchBrowser, screenshot, seriousA11yViolations, startTestNode, watchPageErrors, type TestNode
} from '../helpers/browser.js'

const FIXTURE = path.resolve(import.meta.dirname, '../fixtures/sample-64x64.webm')
/** Files older than the settle window are hashed at once; these are written "now" and wait the whole window. */
const SETTLED = 5
const FRESH = 3
/** Long enough that the fresh files are still waiting when the test looks, whatever the machine's speed. */
const SETTLE_MS = 120_000

interface WatcherJson { watchers: Array<{ fileCount: number, progress: { phase: string, filesSeen: number, filesHashed: number, filesPending?: number } }> }

describe.skipIf(!HAVE_CHROMIUM)('web page: node panel and file preview', () => {
  let browser: Browser
  let node: TestNode

  beforeAll(async () => {
    const past = new Date(Date.now() - 3600_000)
    ;[browser, node] = await Promise.all([launchBrowser(), startTestNode(['--settle-ms', String(SETTLE_MS)], (files) => {
      const watch = path.join(files, 'watch')
      fs.mkdirSync(watch, { recursive: true })
      fs.copyFileSync(FIXTURE, path.join(watch, 'sample.webm'))
      fs.utimesSync(path.join(watch, 'sample.webm'), past, past)
      for (let i = 1; i < SETTLED; i++) {
        fs.writeFileSync(path.join(watch, `settled-${i}.bin`), `settled file ${i}\n`.repeat(100 * i))
        fs.utimesSync(path.join(watch, `settled-${i}.bin`), past, past)
      }
      for (let i = 1; i <= FRESH; i++) fs.writeFileSync(path.join(watch, `fresh-${i}.bin`), `still being written ${i}\n`)
    })])
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await node?.stop()
  })

  it('shows the watcher scanning: files seen, hashed and waiting, as the watcher reports them; and no mesh', async () => {
    // The settled files are recorded; the fresh ones keep the initial scan open, waiting to settle.
    const w = async (): Promise<WatcherJson['watchers'][0]> => (await api<WatcherJson>(`${node.url}/api/watchers`)).json.watchers[0]
    await expect.poll(async () => (await w()).progress.filesHashed, { timeout: 20_000 }).toBe(SETTLED)
    const status = await w()
    expect(status.progress).toMatchObject({ phase: 'initial-scan', filesSeen: SETTLED + FRESH, filesPending: FRESH })

    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } })
    const page = await ctx.newPage()
    const errors = watchPageErrors(page)
    await page.goto(`${node.url}/ui/node`)
    await expect.poll(async () => await page.getByTestId('watcher-state').textContent()).toBe('initial scan')
    expect(await page.getByTestId('watcher-scan').textContent()).toMatch(new RegExp(`^${SETTLED + FRESH} files seen, ${SETTLED} new or changed hashed \\(`))
    // The settled files' full-content CIDs follow in the background while the fresh ones settle (the walk is over).
    await expect.poll(async () => await page.getByTestId('watcher-full-hash').textContent(), { timeout: 20_000 })
      .toMatch(new RegExp(`^sha2-256, ipfs: up to date${SETTLED} files \\(.+\\) hashed since start, 0 had theirs already$`))
    expect(await page.getByTestId('watcher-queue').textContent()).toBe(`${FRESH} waiting to settle or be hashed`)
    expect(await page.locator('.watcher progress').getAttribute('value')).toBe(String(SETTLED / (SETTLED + FRESH)))
    const st = await api<{ fileCount: number, nodeId: string }>(`${node.url}/status`)
    expect(await page.getByTestId('record-count').textContent()).toBe(String(st.json.fileCount))
    expect(st.json.fileCount).toBe(SETTLED)
    await expect.poll(async () => await page.getByTestId('no-mesh').textContent()).toContain('This node runs without a mesh')
    expect(await page.locator('table.peers').count()).toBe(0)

    // A file arriving while the panel is open: the watcher records it, and the panel follows its count.
    const before = (await w()).fileCount
    const late = path.join(node.filesPath, 'watch', 'late.bin')
    fs.writeFileSync(late, 'arrived later\n')
    fs.utimesSync(late, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000))
    await expect.poll(async () => (await w()).fileCount, { timeout: 10_000 }).toBe(before + 1)
    await expect.poll(async () => await page.getByTestId('watcher-files').textContent(), { timeout: 5000 }).toBe(String(before + 1))
    expect(await seriousA11yViolations(page)).toEqual([])
    await screenshot(page, 'node')
    await ctx.close()
    expect(errors).toEqual([])
  })

  it('previews a record\'s media: the <video> loads the file\'s metadata from /file/<cid>', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } })
    const page = await ctx.newPage()
    const errors = watchPageErrors(page)
    await page.goto(`${node.url}/?q=sample.webm`)
    await page.locator('#results a.open', { hasText: 'sample.webm' }).click()
    await page.waitForURL(u => u.pathname.startsWith('/cid/'))
    const video = page.locator('video.preview')
    await video.waitFor()
    expect(await video.getAttribute('src')).toMatch(/^\/file\/b[a-z2-7]+$/)
    await page.waitForFunction(() => document.querySelector<HTMLVideoElement>('video.preview')?.readyState !== undefined &&
      (document.querySelector('video.preview') as HTMLVideoElement).readyState >= 1)
    const media = await video.evaluate((v: HTMLVideoElement) => ({ w: v.videoWidth, h: v.videoHeight, duration: v.duration, error: v.error?.code ?? null }))
    expect(media).toMatchObject({ w: 64, h: 64, error: null })
    expect(media.duration).toBeGreaterThan(0.5)
    expect(media.duration).toBeLessThan(1.5)
    expect(await page.getByRole('link', { name: 'Download' }).getAttribute('href')).toBe(await video.getAttribute('src'))
    await screenshot(page, 'record-media')
    await ctx.close()
    expect(errors).toEqual([])
  })
})
