/**
 * The node panel while the node joins a mesh: a progress bar over the
 * records the peer holds, the share done and the time left, as `/api/mesh`
 * `join` reports them (and `meta-core status` prints them as a bar line);
 * the bar goes once the join is over and the node counts the records.
 *
 * The joining node is a whole node (store, search, mesh over libp2p TCP on
 * 127.0.0.1, API, page) with an empty store. The peer it joins is a bare
 * libp2p peer on the swarm key that answers pulls as a meta-core node
 * holding 600 records would (test/helpers/rogue-peer.ts `serveRange`: the
 * same wire messages, the first page saying how many records it holds), and
 * sends the range's last page only when the test lets it. A second real
 * node as the peer would do too, but it copies a few thousand records in a
 * second or two (1,400 to 2,300 records/s, docs/benchmarks.md), less than the
 * page's 3 s poll, and how far the join got when the test looks would be
 * left to the machine's speed; this way the join is held at a known point
 * while the page is read, and every figure shown is the joining node's own.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser } from 'playwright-core'
import { fetchStatus, formatStatus } from '../../src/node/status-command.js'
import { formatHlc, newRecordId, type RemoteEntry } from '../../src/records/index.js'
import {
  HAVE_CHROMIUM, api, launchBrowser, screenshot, seriousA11yViolations, startTestNode, waitFor, watchPageErrors, type TestNode
} from '../helpers/browser.js'
import { startRogue, type RoguePeer } from '../helpers/rogue-peer.js'

const PAGES = 4
const PAGE_ROOTS = 150
const RECORDS = PAGES * PAGE_ROOTS
/** Pages before the last are in; a page's last root waits for the next page (it may continue there). */
const HELD_AT = (PAGES - 1) * PAGE_ROOTS - 1

interface Join { active: boolean, records: number, expectedRecords: number | null, secondsLeft: number | null }
interface Mesh { self: { peerId: string, addrs: string[] }, join: Join }

/** The range the peer serves: RECORDS records of three fields, in key order, cut into PAGES pages. */
function rangePages (): RemoteEntry[][] {
  const base = Date.now() - 60_000
  const pages: RemoteEntry[][] = []
  for (let p = 0; p < PAGES; p++) {
    const page: RemoteEntry[] = []
    for (let i = p * PAGE_ROOTS; i < (p + 1) * PAGE_ROOTS; i++) {
      const rid = newRecordId(base + i)
      const hlc = formatHlc({ ms: base + i, counter: 0 })
      const fields: Record<string, string> = { title: `Joined film ${i}`, type: 'movie', year: String(1950 + (i % 70)) }
      for (const [f, v] of Object.entries(fields).sort()) page.push({ key: `file:${rid}/${f}`, value: v, hlc, origin: 'origin-attic' })
    }
    pages.push(page)
  }
  return pages
}

describe.skipIf(!HAVE_CHROMIUM)('web page: a join under way', () => {
  let browser: Browser
  let b: TestNode
  let peer: RoguePeer
  let keyDir: string
  let release: () => void = () => {}

  beforeAll(async () => {
    keyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-ui-key-'))
    const key = path.join(keyDir, 'swarm.key')
    fs.writeFileSync(key, `/key/swarm/psk/1.0.0/\n/base16/\n${crypto.randomBytes(32).toString('hex')}\n`, { mode: 0o600 })
    ;[browser, b, peer] = await Promise.all([
      launchBrowser(),
      // A short round interval: a page request the peer holds past the pull timeout is asked again soon.
      startTestNode(['--enable-file-watcher=false', '--swarm-key', key, '--p2p-listen', '/ip4/127.0.0.1/tcp/0', '--node-name', 'new-shelf', '--anti-entropy-ms',
        '1000']),
      startRogue(key, { name: 'attic' })
    ])
    const held = new Promise<void>((resolve) => { release = resolve })
    await peer.serveRange({ pages: rangePages(), records: RECORDS, delayMs: 300, lastPageAfter: held })
  }, 60_000)
  afterAll(async () => {
    release()
    await browser?.close()
    await peer?.stop()
    await b?.stop()
    if (keyDir !== undefined) fs.rmSync(keyDir, { recursive: true, force: true })
  })

  it('shows the join as a bar with the share done and the time left, as meta-core status does, and drops it once the join is over', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } })
    const page = await ctx.newPage()
    const errors = watchPageErrors(page)
    await page.goto(`${b.url}/ui/node`)
    await page.getByTestId('peer-summary').waitFor()
    // No join yet: no bar.
    expect(await page.getByTestId('join').count()).toBe(0)

    const self = (await api<Mesh>(`${b.url}/api/mesh`)).json.self
    await peer.dial(self.addrs.find(a => a.startsWith('/ip4/127.0.0.1/'))!)
    await waitFor(async () => (await api<Mesh>(`${b.url}/api/mesh`)).json.join.records >= HELD_AT,
      { timeoutMs: 30_000, what: 'B to take every page but the last' })
    const join = (await api<Mesh>(`${b.url}/api/mesh`)).json.join
    expect(join).toMatchObject({ active: true, records: HELD_AT, expectedRecords: RECORDS })
    const percent = Math.floor(HELD_AT / RECORDS * 100)

    // The page shows the node's figures: the bar at the records taken of the peer's, the share, the time left.
    const bar = page.getByRole('progressbar', { name: 'Join progress' })
    await expect.poll(async () => await bar.getAttribute('value'), { timeout: 10_000 }).toBe(String(HELD_AT))
    expect(await bar.getAttribute('max')).toBe(String(RECORDS))
    expect(await page.getByTestId('join-percent').textContent()).toBe(`${percent} %`)
    expect(await page.getByTestId('join-figures').textContent()).toMatch(new RegExp(`^${percent} %: ${HELD_AT} of ${RECORDS} records, \\d+ records/s, `))
    // At the rate so far (it falls while the last page is held back, so the estimate grows).
    expect(await page.getByTestId('join-left').textContent()).toMatch(/^(about (\d+ s|\d+ min \d+ s|\d+ h \d+ min)|under a second) left$/)
    // The peer's row says what is happening with it: a full resync, from the peer by its name.
    const row = page.locator(`table.peers tr[data-peer="${peer.peerId}"]`)
    expect(await row.getByTestId('peer-lag').textContent()).toMatch(/^full resync, /)
    await expect.poll(async () => await row.getByTestId('peer-name').textContent()).toBe('attic')

    // meta-core status prints the same join as a bar line.
    const table = formatStatus(await fetchStatus(b.url, undefined, 5_000))
    expect(table.split('\n').find(l => l.startsWith('join'))).toMatch(new RegExp(`^join +\\[#+\\.+\\] ${percent} % {2}${HELD_AT} of ${RECORDS} records, \\d+ records/s, (about .+|under a second) left$`))

    expect(await seriousA11yViolations(page)).toEqual([])
    await page.getByTestId('join').scrollIntoViewIfNeeded()
    await screenshot(page, 'node-join')

    // The last page: the join ends, the bar goes, and the node counts the records it took.
    release()
    await waitFor(async () => !(await api<Mesh>(`${b.url}/api/mesh`)).json.join.active, { timeoutMs: 30_000, what: 'the join to end' })
    await expect.poll(async () => await page.getByTestId('join').count(), { timeout: 10_000 }).toBe(0)
    await expect.poll(async () => await page.getByTestId('record-count').textContent(), { timeout: 10_000 }).toBe(String(RECORDS))
    const after = formatStatus(await fetchStatus(b.url, undefined, 5_000))
    expect(after.split('\n').find(l => l.startsWith('join'))).toMatch(new RegExp(`^join +done: ${RECORDS} records in .+, ended .+ ago \\(\\d+ records/s\\)$`))
    await ctx.close()
    expect(errors).toEqual([])
  })
})
