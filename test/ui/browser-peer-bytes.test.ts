/**
 * The record page on a node without the file plays it from the node that
 * has it: A holds a small WebM in its library, C (meshed with A, no copy)
 * shows the record with a <video> that loads its metadata through C's
 * `/file/<cid>` (streamed from A), seeks to the middle and plays from
 * there, and the page names A (its name beside its id) as the node the
 * bytes come from. The record's holders list A by its name, with the link
 * that plays the file through C; C's node panel counts the record but no
 * file of its own, A's its one file.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser } from 'playwright-core'
import { midhash256 } from '../../src/cid/index.js'
import { HAVE_CHROMIUM, api, launchBrowser, screenshot, startTestNode, waitFor, watchPageErrors, type TestNode } from '../helpers/browser.js'

const SAMPLE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/sample-64x64.webm')

interface Mesh { self: { peerId: string, name: string, addrs: string[] }, peers: Array<{ peerId: string, connected: boolean }> }

describe.skipIf(!HAVE_CHROMIUM)('web page: a file only another node holds', () => {
  let browser: Browser
  let a: TestNode
  let c: TestNode
  let keyDir: string
  let cid: string
  let canonical = ''
  let peerA: string

  beforeAll(async () => {
    keyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-ui-key-'))
    const key = path.join(keyDir, 'swarm.key')
    fs.writeFileSync(key, `/key/swarm/psk/1.0.0/\n/base16/\n${crypto.randomBytes(32).toString('hex')}\n`, { mode: 0o600 })
    const mesh = ['--swarm-key', key, '--p2p-listen', '/ip4/127.0.0.1/tcp/0']
    ;[browser, a] = await Promise.all([
      launchBrowser(),
      startTestNode([...mesh, '--enable-file-watcher=true', '--settle-ms', '0', '--node-name', 'living-room'], (files) => {
        const dst = path.join(files, 'films', 'sample.webm')
        fs.mkdirSync(path.dirname(dst), { recursive: true })
        fs.copyFileSync(SAMPLE, dst)
        // Settled already: the watcher hashes it in its first scan.
        fs.utimesSync(dst, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000))
      })
    ])
    cid = (await midhash256(SAMPLE)).cid
    const self = (await api<Mesh>(`${a.url}/api/mesh`)).json.self
    peerA = self.peerId
    c = await startTestNode([...mesh, '--enable-file-watcher=false', '--bootstrap', self.addrs[0]])
    await waitFor(async () => (await api<{ metadata: Record<string, string> }>(`${c.url}/api/meta/${cid}`)).json?.metadata?.[`holders/${peerA}`] === 'true',
      { timeoutMs: 30_000, what: 'C to learn the record and that A holds it' })
    // A's watcher adds the file's full-content CIDs in the background: the record's canonical CID is the sha2-256 one then.
    await waitFor(async () => {
      canonical = (await api<{ canonical_cid: string }>(`${c.url}/api/meta/${cid}`)).json?.canonical_cid ?? ''
      return canonical.startsWith('bafkrei')
    }, { timeoutMs: 30_000, what: 'C to learn the record\'s full-content CIDs' })
  }, 90_000)
  afterAll(async () => {
    await browser?.close()
    await c?.stop()
    await a?.stop()
    if (keyDir !== undefined) fs.rmSync(keyDir, { recursive: true, force: true })
  })

  it('plays it on C from A: metadata loads, a seek to the middle plays, and the page names A', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } })
    const page = await ctx.newPage()
    const errors = watchPageErrors(page)
    await page.goto(`${c.url}/cid/${cid}`)
    const video = page.locator('video.preview')
    await video.waitFor()
    expect(await video.getAttribute('src')).toBe(`/file/${canonical}`)
    await page.waitForFunction(() => document.querySelector<HTMLVideoElement>('video.preview')?.readyState !== undefined &&
      (document.querySelector('video.preview') as HTMLVideoElement).readyState >= 1)
    const media = await video.evaluate((v: HTMLVideoElement) => ({ w: v.videoWidth, h: v.videoHeight, duration: v.duration, error: v.error?.code ?? null }))
    expect(media).toMatchObject({ w: 64, h: 64, error: null })
    // Seek to the middle and play from there (muted: headless Chromium plays without a gesture only so).
    const played = await video.evaluate(async (v: HTMLVideoElement) => {
      v.muted = true
      const middle = v.duration / 2
      await new Promise<void>((resolve) => { v.addEventListener('seeked', () => { resolve() }, { once: true }); v.currentTime = middle })
      const playing = new Promise<void>((resolve) => { v.addEventListener('playing', () => { resolve() }, { once: true }) })
      await v.play()
      await playing
      return { from: middle, at: v.currentTime, error: v.error?.code ?? null }
    })
    expect(played.error).toBeNull()
    expect(played.at).toBeGreaterThanOrEqual(played.from - 0.05)
    // The node the bytes come from, by its name beside its short id (the whole id in the title), as the holders are.
    const servedBy = page.getByTestId('served-by')
    await expect.poll(async () => await servedBy.textContent()).toMatch(/^Streamed from node living-room 12D3Ko\w{0,4}…\w+, which holds the file/)
    expect(await servedBy.locator('.node-label').getAttribute('title')).toBe(peerA)
    // The holders: A by the name it announced, beside its short id (the whole id in the title), and one
    // link that plays the file through C (C picks the holder: GET /file/<cid> takes no choice of one).
    const holders = page.getByTestId('holders')
    await expect.poll(async () => await holders.textContent()).toMatch(/^living-room 12D3Ko\w{0,4}…\w+$/)
    expect(await holders.locator('.node-label').getAttribute('title')).toBe(peerA)
    expect(await page.getByTestId('play-through').getAttribute('href')).toBe(await video.getAttribute('src'))
    await page.locator('#file-title').evaluate((el) => { el.scrollIntoView() })
    await screenshot(page, 'record-peer')
    await ctx.close()
    expect(errors).toEqual([])
  })

  it('counts on C\'s node panel the record but no file of its own (the record names A\'s file)', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } })
    const page = await ctx.newPage()
    const errors = watchPageErrors(page)
    await page.goto(`${c.url}/ui/node`)
    await expect.poll(async () => [await page.getByTestId('record-count').textContent(), await page.getByTestId('own-files').textContent()],
      { timeout: 10_000 })
      .toEqual(['1', '0'])
    await ctx.close()
    expect(errors).toEqual([])
  })

  it('shows on A\'s node panel its own file and the bytes it sent C, C by its name as in the peers table', async () => {
    const selfC = (await api<Mesh>(`${c.url}/api/mesh`)).json.self
    const peerC = selfC.peerId
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } })
    const page = await ctx.newPage()
    const errors = watchPageErrors(page)
    await page.goto(`${a.url}/ui/node`)
    await expect.poll(async () => await page.getByTestId('own-files').textContent(), { timeout: 10_000 }).toBe('1')
    const row = page.locator(`table.transfers tr[data-peer="${peerC}"]`)
    await row.waitFor()
    const sent = await row.locator('td').nth(1).textContent()
    expect(sent).not.toMatch(/^0\b/)
    expect(await row.getByTestId('transfers-now').textContent()).toBe('idle')
    expect(await row.getByTestId('transfers-peer').textContent()).toBe(`${selfC.name} ${peerC.slice(0, 8)}…${peerC.slice(-8)}`)
    expect(await page.locator(`table.peers tr[data-peer="${peerC}"]`).getByTestId('peer-name').textContent()).toBe(selfC.name)
    await ctx.close()
    expect(errors).toEqual([])
  })
})
