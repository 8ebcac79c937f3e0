/**
 * The node panel's mesh part against two real nodes meshed over libp2p on
 * 127.0.0.1 (one swarm key, the second bootstrapping from the first): the
 * panel lists the peer as connected and caught up, and, once the page is
 * given the other node's HTTP address, says whether their digests agree,
 * before and after a write replicates. Each peer's lag is worded as
 * `meta-core status` words it, shown with a peer that holds the swarm key
 * but runs no meta-core (its first pull never completes, its bad frame is
 * counted). When the second node leaves the mesh (restarted on its store
 * and identity with another swarm key), a write on the first no longer
 * reaches it and the panel says their digests differ.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { apiFields, syntheticRecord } from '../../bench/lib/synthetic.js'
import {
  HAVE_CHROMIUM, api, launchBrowser, screenshot, seriousA11yViolations, startTestNode, waitFor, watchPageErrors, type TestNode
} from '../helpers/browser.js'
import { startRogue } from '../helpers/rogue-peer.js'

interface Mesh { enabled?: boolean, meshId?: string, self: { peerId: string, addrs: string[] },
  peers: Array<{ peerId: string, connected: boolean, behind: boolean }> }
interface Digest { digest: string, keys: number }

function writeSwarmKey (file: string): void {
  fs.writeFileSync(file, `/key/swarm/psk/1.0.0/\n/base16/\n${crypto.randomBytes(32).toString('hex')}\n`, { mode: 0o600 })
}

/** A node's p2p address on 127.0.0.1, ending in its peer id. */
async function dialAddr (url: string): Promise<string> {
  const self = (await api<Mesh>(`${url}/api/mesh`)).json.self
  const dial = self.addrs.find(x => x.startsWith('/ip4/127.0.0.1/tcp/'))!
  return dial.includes('/p2p/') ? dial : `${dial}/p2p/${self.peerId}`
}

describe.skipIf(!HAVE_CHROMIUM)('web page: the mesh of two nodes', () => {
  let browser: Browser
  let a: TestNode
  let b: TestNode
  let keyDir: string
  let key: string
  const meshFlags = (swarmKey: string): string[] => ['--enable-file-watcher=false', '--swarm-key', swarmKey, '--p2p-listen', '/ip4/127.0.0.1/tcp/0']

  beforeAll(async () => {
    keyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-ui-key-'))
    key = path.join(keyDir, 'swarm.key')
    writeSwarmKey(key)
    ;[browser, a] = await Promise.all([launchBrowser(), startTestNode([...meshFlags(key), '--node-name', 'living-room'])])
    b = await startTestNode([...meshFlags(key), '--node-name', 'attic', '--bootstrap', await dialAddr(a.url)])
    await waitFor(async () => (await api<Mesh>(`${a.url}/api/mesh`)).json.peers.some(p => p.connected), { timeoutMs: 20_000, what: 'the two nodes to connect' })
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await b?.stop()
    await a?.stop()
    if (keyDir !== undefined) fs.rmSync(keyDir, { recursive: true, force: true })
  })

  /** A fresh browser context (its own stored addresses) on A's node panel, with the row of `peerId` shown. */
  async function openPanel (peerId: string): Promise<{ ctx: BrowserContext, page: Page, row: Locator, errors: string[] }> {
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } })
    const page = await ctx.newPage()
    const errors = watchPageErrors(page)
    await page.goto(`${a.url}/ui/node`)
    const row = page.locator(`table.peers tr[data-peer="${peerId}"]`)
    await row.waitFor()
    return { ctx, page, row, errors }
  }

  /** Gives the page another node's HTTP address to compare digests with. */
  async function compareWith (page: Page, url: string): Promise<void> {
    await page.getByLabel('Node address').fill(url)
    await page.getByRole('button', { name: 'Compare' }).click()
  }

  it('shows the peer connected and caught up, and whether the digests agree once a write has replicated', async () => {
    const peerB = (await api<Mesh>(`${b.url}/api/mesh`)).json.self.peerId
    const { ctx, page, row, errors } = await openPanel(peerB)
    await expect.poll(async () => await row.getByTestId('peer-connection').textContent()).toBe('connected')
    // Each node by the name it announced, beside its id.
    expect(await page.getByTestId('self-name').textContent()).toBe('living-room')
    // On 127.0.0.1 with no relay, no announced address and no router: reachable on its LAN only, and the page says what to do.
    expect(await page.getByTestId('reachability').textContent()).toMatch(/^LAN only: members outside this LAN \(or VPN\) cannot reach it; set META_CORE_ANNOUNCE/)
    await expect.poll(async () => await row.getByTestId('peer-name').textContent()).toBe('attic')
    // No address typed: the node asks B for its digest over the mesh.
    await expect.poll(async () => await row.getByTestId('peer-digest').textContent()).toBe('agrees')
    await compareWith(page, b.url)

    // A write on A replicates to B: then both digests are equal and the row says so.
    const rec = syntheticRecord(42)
    expect((await api(`${a.url}/meta/${rec.cid}`, 'PATCH', apiFields(rec))).status).toBe(200)
    await waitFor(async () => (await api(`${b.url}/api/meta/${rec.cid}`)).status === 200, { timeoutMs: 20_000, what: 'the write to reach B' })
    await waitFor(async () => {
      const [da, db] = await Promise.all([api<Digest>(`${a.url}/api/mesh/digest`), api<Digest>(`${b.url}/api/mesh/digest`)])
      return da.json.digest === db.json.digest
    }, { timeoutMs: 20_000, what: 'equal digests' })
    // Two empty stores agree too: the page must show the digest over the new keys, and agreement with it.
    const own = (await api<Digest>(`${a.url}/api/mesh/digest`)).json
    expect(own.keys).toBeGreaterThanOrEqual(Object.keys(apiFields(rec)).length)
    await expect.poll(async () => [await page.getByTestId('own-digest').textContent(), await row.getByTestId('peer-digest').textContent()], { timeout: 10_000 })
      .toEqual([`${own.digest.slice(0, 8)}…${own.digest.slice(-8)} over ${own.keys} keys`, 'agrees'])
    await expect.poll(async () => await page.getByTestId('compare-verdict').textContent()).toBe('a peer, digest agrees')
    await expect.poll(async () => await row.getByTestId('peer-lag').textContent(), { timeout: 10_000 }).toMatch(/^caught up, synced /)
    expect(await row.getByTestId('peer-lag').getAttribute('title')).toMatch(/^last caught up \d/)
    expect(await seriousA11yViolations(page)).toEqual([])
    await screenshot(page, 'node-mesh')
    await ctx.close()
    expect(errors).toEqual([])
  })

  it('words each peer\'s lag as meta-core status does, and counts its rejected frames', async () => {
    // A peer holding the swarm key but running no meta-core: it connects, but A's first pull from it
    // (a full resync) can never complete, so its lag grows from when A first saw it.
    const rogue = await startRogue(key)
    let rogueUp = true
    let ctx: BrowserContext | undefined
    try {
      await rogue.dial(await dialAddr(a.url))
      await waitFor(async () => (await api<Mesh>(`${a.url}/api/mesh`)).json.peers.some(p => p.peerId === rogue.peerId && p.connected),
        { timeoutMs: 10_000, what: 'A to see the peer' })
      const panel = await openPanel(rogue.peerId)
      ctx = panel.ctx
      const { row, errors } = panel
      const lag = row.getByTestId('peer-lag')
      await expect.poll(async () => await lag.textContent(), { timeout: 10_000 }).toMatch(/^(full resync|first sync), \d+(\.\d)? (ms|s)$/)
      expect(await lag.getAttribute('title')).toBe('never caught up with this peer')
      // (A node holding records, as A does after the test above, reconciles with a new peer rather than
      // copying its range: then the row says first sync.)
      // A malformed frame from it is refused and counted in its row.
      await rogue.publish(new Uint8Array([1, 0, 0x7b, 0x7b, 0x7b]))
      await expect.poll(async () => await row.locator('td').nth(5).textContent(), { timeout: 10_000 }).toBe('1')
      // Gone before any pull from it applied a page: never synced.
      await rogue.stop()
      rogueUp = false
      await expect.poll(async () => await row.getByTestId('peer-connection').textContent(), { timeout: 10_000 }).toMatch(/^disconnected(, last seen .+)?$/)
      expect(await lag.textContent()).toBe('never synced')
      expect(errors).toEqual([])
    } finally {
      await ctx?.close()
      if (rogueUp) await rogue.stop()
    }
  })

  it('names the writing node in the Versions table without scrolling at 1,280 px, and stacks the peers on a phone', async () => {
    const peerB = (await api<Mesh>(`${b.url}/api/mesh`)).json.self.peerId
    // Written on B, read on A: the Versions table names B.
    const rec = syntheticRecord(44)
    expect((await api(`${b.url}/meta/${rec.cid}`, 'PATCH', { ...apiFields(rec), 'a/rather/long/nested/field/name/that/must/wrap/inside/its/cell': 'x' })).status).toBe(200)
    await waitFor(async () => (await api(`${a.url}/api/meta/${rec.cid}`)).status === 200, { timeoutMs: 20_000, what: 'the write to reach A' })
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const page = await ctx.newPage()
    const errors = watchPageErrors(page)
    await page.goto(`${a.url}/cid/${rec.cid}`)
    const byNode = page.locator('table.versions tbody tr td:nth-child(3)').first()
    await expect.poll(async () => await byNode.textContent()).toMatch(/^attic 12D3Ko…/)
    expect(await byNode.locator('.node-label').getAttribute('title')).toBe(peerB)
    const wrap = page.locator('table.versions').locator('xpath=..')
    expect(await wrap.evaluate(el => el.scrollWidth <= el.clientWidth)).toBe(true)

    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto(`${a.url}/ui/node`)
    const row = page.locator(`table.peers tr[data-peer="${peerB}"]`)
    await row.waitFor()
    expect(await row.evaluate(el => getComputedStyle(el).display)).toBe('block')
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    expect(await seriousA11yViolations(page)).toEqual([])
    await page.locator('#mesh-title').scrollIntoViewIfNeeded()
    await page.evaluate(() => { document.getElementById('mesh-title')?.scrollIntoView() })
    await screenshot(page, 'node-phone')
    await ctx.close()
    expect(errors).toEqual([])
  })

  it('says the digests differ when a write no longer reaches the peer', async () => {
    const peerB = (await api<Mesh>(`${b.url}/api/mesh`)).json.self.peerId
    // B leaves the mesh: restarted on its own store and identity key, with another swarm key, so it
    // can no longer connect to A (nor A to it) and nothing written on A reaches it.
    const otherKey = path.join(keyDir, 'other.key')
    writeSwarmKey(otherKey)
    b = await b.restart(meshFlags(otherKey))
    expect((await api<Mesh>(`${b.url}/api/mesh`)).json.self.peerId).toBe(peerB)
    await waitFor(async () => (await api<Mesh>(`${a.url}/api/mesh`)).json.peers.some(p => p.peerId === peerB && !p.connected),
      { timeoutMs: 10_000, what: 'A to see B gone' })
    const rec = syntheticRecord(43)
    expect((await api(`${a.url}/meta/${rec.cid}`, 'PATCH', apiFields(rec))).status).toBe(200)
    const [da, db] = (await Promise.all([api<Digest>(`${a.url}/api/mesh/digest`), api<Digest>(`${b.url}/api/mesh/digest`)])).map(r => r.json)
    expect(da.digest).not.toBe(db.digest)
    expect(da.keys).toBeGreaterThan(db.keys)

    const { ctx, page, row, errors } = await openPanel(peerB)
    await compareWith(page, b.url)
    await expect.poll(async () => await row.getByTestId('peer-digest').textContent(), { timeout: 10_000 })
      .toBe(`differs (${db.keys.toLocaleString('en')} keys there, ${da.keys.toLocaleString('en')} here)`)
    // A member it was connected to: the row says when it was last seen, not only that it is gone.
    expect(await row.getByTestId('peer-connection').textContent()).toMatch(/^disconnected, last seen (just now|\d+ s ago|\d+ min ago)$/)
    // The compare list says why: B is in another mesh now.
    const otherMesh = (await api<Mesh>(`${b.url}/api/mesh`)).json.meshId
    await expect.poll(async () => await page.getByTestId('compare-verdict').textContent()).toBe(`another mesh (${otherMesh}): it never replicates with this node`)
    // It was caught up when it left: the lag says so, as of its last sync (not that it is caught up now, nor behind).
    expect(await row.getByTestId('peer-lag').textContent()).toMatch(/^was caught up when last synced (just now|\d+ s ago|\d+ min ago)$/)
    expect(await seriousA11yViolations(page)).toEqual([])
    await ctx.close()
    expect(errors).toEqual([])
  })
})
