/**
 * The node panel says how each peer reaches the node as `/api/mesh` and
 * `meta-core status` say it. Three real nodes in a chain A - B - C on
 * 127.0.0.1 (no connections beyond the bootstrap lists): C hears A's frames
 * only through B, so on C's panel A is "via gossip" with when it was last
 * heard (no lag of its own, nothing to compare by address), not
 * "disconnected, never synced"; B is connected. Once B stops, C's panel says
 * B is disconnected and when it was last seen (when the connection
 * dropped), with its lag as of its last sync.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser } from 'playwright-core'
import {
  HAVE_CHROMIUM, api, launchBrowser, seriousA11yViolations, startTestNode, waitFor, watchPageErrors, type TestNode
} from '../helpers/browser.js'
import { testCid } from '../helpers/record-ops.js'

interface Peer { peerId: string, connected: boolean, via?: string, framesIn: number, lastSyncAt: string | null }
interface Mesh { self: { peerId: string, addrs: string[] }, peers: Peer[] }

async function dialAddr (url: string): Promise<string> {
  const self = (await api<Mesh>(`${url}/api/mesh`)).json.self
  const dial = self.addrs.find(x => x.startsWith('/ip4/127.0.0.1/tcp/'))!
  return dial.includes('/p2p/') ? dial : `${dial}/p2p/${self.peerId}`
}

describe.skipIf(!HAVE_CHROMIUM)('web page: peers heard through gossip', () => {
  let browser: Browser
  let keyDir: string
  const nodes: TestNode[] = []

  beforeAll(async () => {
    keyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-ui-key-'))
    const key = path.join(keyDir, 'swarm.key')
    fs.writeFileSync(key, `/key/swarm/psk/1.0.0/\n/base16/\n${crypto.randomBytes(32).toString('hex')}\n`, { mode: 0o600 })
    // --target-peers 0: each node dials only its bootstrap list, so the chain stays a chain.
    const flags = ['--enable-file-watcher=false', '--swarm-key', key, '--p2p-listen', '/ip4/127.0.0.1/tcp/0', '--target-peers', '0']
    browser = await launchBrowser()
    nodes.push(await startTestNode([...flags, '--node-name', 'a']))
    nodes.push(await startTestNode([...flags, '--node-name', 'b', '--bootstrap', await dialAddr(nodes[0].url)]))
    nodes.push(await startTestNode([...flags, '--node-name', 'c', '--bootstrap', await dialAddr(nodes[1].url)]))
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    for (const n of nodes.reverse()) await n.stop()
    if (keyDir !== undefined) fs.rmSync(keyDir, { recursive: true, force: true })
  })

  it('shows a signer heard only through relayed gossip as such, and a stopped peer with when it was last seen', async () => {
    const [a, b, c] = nodes
    const peerA = (await api<Mesh>(`${a.url}/api/mesh`)).json.self.peerId
    const peerB = (await api<Mesh>(`${b.url}/api/mesh`)).json.self.peerId
    await waitFor(async () => (await api<Mesh>(`${c.url}/api/mesh`)).json.peers.some(p => p.peerId === peerB && p.connected),
      { timeoutMs: 20_000, what: 'C to connect to B' })
    // Gossipsub needs a heartbeat or two before B forwards A's frames: write on A until one reaches C by push.
    let i = 0
    await waitFor(async () => {
      await api(`${a.url}/meta/${testCid(300 + i++)}`, 'PATCH', { title: 'from a' })
      return (await api<Mesh>(`${c.url}/api/mesh`)).json.peers.some(p => p.peerId === peerA && p.framesIn > 0)
    }, { timeoutMs: 20_000, intervalMs: 200, what: 'a frame of A to reach C through B' })
    const viaApi = (await api<Mesh>(`${c.url}/api/mesh`)).json.peers.find(p => p.peerId === peerA)
    expect(viaApi).toMatchObject({ via: 'gossip', connected: false })

    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } })
    const page = await ctx.newPage()
    const errors = watchPageErrors(page)
    await page.goto(`${c.url}/ui/node`)
    const rowA = page.locator(`table.peers tr[data-peer="${peerA}"]`)
    const rowB = page.locator(`table.peers tr[data-peer="${peerB}"]`)
    await rowA.waitFor()
    await expect.poll(async () => await rowA.getByTestId('peer-connection').textContent()).toMatch(/^via gossip, last heard (just now|\d+ s ago)$/)
    expect(await rowA.getByTestId('peer-lag').textContent()).toBe('—')
    expect(await rowA.getByTestId('peer-connection').getAttribute('title')).toMatch(/^known only as the signer of frames other peers relayed.*; the last frame it signed came \d/)
    expect(await rowA.getByTestId('peer-digest').textContent()).toBe('not connected: its changes come through other peers')
    await expect.poll(async () => await rowB.getByTestId('peer-connection').textContent()).toBe('connected')
    expect(await page.getByTestId('peer-summary').textContent()).toBe('1 connected of 1 known, 1 heard via gossip')
    expect(await seriousA11yViolations(page)).toEqual([])

    // B stops: C's panel says it is disconnected and when it was last seen; the lag is as of its last sync.
    const stoppedAt = Date.now()
    await b.stop()
    nodes.splice(nodes.indexOf(b), 1)
    await expect.poll(async () => await rowB.getByTestId('peer-connection').textContent(), { timeout: 15_000 }).toMatch(/^disconnected, last seen (just now|\d+ s ago)$/)
    expect(await rowB.getByTestId('peer-connection').getAttribute('title')).toMatch(/^last seen \d/)
    expect(await rowB.getByTestId('peer-lag').textContent()).toMatch(/^was (caught up|behind) when last synced (just now|\d+ s ago)$/)
    // Last seen when the connection dropped, not when it opened (the API's time, which the title shows).
    const seenB = (await api<{ peers: Array<{ peerId: string, lastSeenAt: string }> }>(`${c.url}/api/mesh`)).json.peers.find(p => p.peerId === peerB)
    expect(Date.parse(seenB!.lastSeenAt)).toBeGreaterThanOrEqual(stoppedAt)
    await ctx.close()
    expect(errors).toEqual([])
  })
})
