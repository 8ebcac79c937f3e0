/**
 * The node panel's mesh part against two real nodes meshed over libp2p on
 * 127.0.0.1 (one swarm key, the second bootstrapping from the first): the
 * panel lists the peer as connected and caught up, and, once the page is
 * given the other node's HTTP address, says whether their digests agree,
 * before and after a write replicates.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser } from 'playwright-core'
import { syntheticRecord } from '../../bench/lib/synthetic.js'
import {
  HAVE_CHROMIUM, api, launchBrowser, screenshot, seriousA11yViolations, startTestNode, waitFor, watchPageErrors, type TestNode
} from '../helpers/browser.js'

interface Mesh { enabled?: boolean, meshId?: string, self: { peerId: string, addrs: string[] }, peers: Array<{ peerId: string, connected: boolean, behind: boolean }> }
interface Digest { digest: string, keys: number }

describe.skipIf(!HAVE_CHROMIUM)('web page: the mesh of two nodes', () => {
  let browser: Browser
  let a: TestNode
  let b: TestNode
  let keyDir: string

  beforeAll(async () => {
    keyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-ui-key-'))
    const key = path.join(keyDir, 'swarm.key')
    fs.writeFileSync(key, `/key/swarm/psk/1.0.0/\n/base16/\n${crypto.randomBytes(32).toString('hex')}\n`, { mode: 0o600 })
    const mesh = ['--enable-file-watcher=false', '--swarm-key', key, '--p2p-listen', '/ip4/127.0.0.1/tcp/0']
    ;[browser, a] = await Promise.all([launchBrowser(), startTestNode(mesh)])
    const self = (await api<Mesh>(`${a.url}/api/mesh`)).json.self
    const dial = self.addrs.find(x => x.startsWith('/ip4/127.0.0.1/tcp/'))!
    b = await startTestNode([...mesh, '--bootstrap', dial.includes('/p2p/') ? dial : `${dial}/p2p/${self.peerId}`])
    await waitFor(async () => (await api<Mesh>(`${a.url}/api/mesh`)).json.peers.some(p => p.connected), { timeoutMs: 20_000, what: 'the two nodes to connect' })
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await b?.stop()
    await a?.stop()
    if (keyDir !== undefined) fs.rmSync(keyDir, { recursive: true, force: true })
  })

  it('shows the peer connected and caught up, and whether the digests agree once a write has replicated', async () => {
    const peerB = (await api<Mesh>(`${b.url}/api/mesh`)).json.self.peerId
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } })
    const page = await ctx.newPage()
    const errors = watchPageErrors(page)
    await page.goto(`${a.url}/ui/node`)
    const row = page.locator(`table.peers tr[data-peer="${peerB}"]`)
    await row.waitFor()
    await expect.poll(async () => await row.locator('td').nth(1).textContent()).toBe('connected')
    // The page cannot reach B's digest until it is told B's address.
    expect(await row.getByTestId('peer-digest').textContent()).toBe('not reachable from this page')
    await page.getByLabel('Node address').fill(b.url)
    await page.getByRole('button', { name: 'Compare' }).click()

    // A write on A replicates to B: then both digests are equal and the row says so.
    const rec = syntheticRecord(42)
    expect((await api(`${a.url}/meta/${rec.cid}`, 'PATCH', rec.fields)).status).toBe(200)
    await waitFor(async () => (await api(`${b.url}/api/meta/${rec.cid}`)).status === 200, { timeoutMs: 20_000, what: 'the write to reach B' })
    await waitFor(async () => {
      const [da, db] = await Promise.all([api<Digest>(`${a.url}/api/mesh/digest`), api<Digest>(`${b.url}/api/mesh/digest`)])
      return da.json.digest === db.json.digest
    }, { timeoutMs: 20_000, what: 'equal digests' })
    // Two empty stores agree too: the page must show the digest over the new keys, and agreement with it.
    const own = (await api<Digest>(`${a.url}/api/mesh/digest`)).json
    expect(own.keys).toBeGreaterThanOrEqual(Object.keys(rec.fields).length)
    await expect.poll(async () => [await page.getByTestId('own-digest').textContent(), await row.getByTestId('peer-digest').textContent()], { timeout: 10_000 })
      .toEqual([`${own.digest.slice(0, 8)}…${own.digest.slice(-8)} over ${own.keys} keys`, 'agrees'])
    await expect.poll(async () => await row.locator('td').nth(2).textContent(), { timeout: 10_000 }).toMatch(/^caught up/)
    expect(await seriousA11yViolations(page)).toEqual([])
    await screenshot(page, 'node-mesh')
    await ctx.close()
    expect(errors).toEqual([])
  })
})
