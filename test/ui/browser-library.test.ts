/**
 * The page in headless Chromium against a real node: search, open a
 * record, keyboard use, addresses and the back button, live updates from
 * the event stream, and axe-core's accessibility rules.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { apiFields, syntheticRecord } from '../../bench/lib/synthetic.js'
import {
  HAVE_CHROMIUM, api, launchBrowser, screenshot, seriousA11yViolations, startTestNode, watchPageErrors, type TestNode
} from '../helpers/browser.js'

const RECORDS = 60

describe.skipIf(!HAVE_CHROMIUM)('web page: library and record', () => {
  let browser: Browser
  let node: TestNode
  let ctx: BrowserContext
  let page: Page
  let errors: string[]

  beforeAll(async () => {
    ;[browser, node] = await Promise.all([launchBrowser(), startTestNode(['--enable-file-watcher=false'])])
    for (let i = 1; i <= RECORDS; i++) {
      const r = syntheticRecord(i)
      const w = await api(`${node.url}/meta/${r.cid}`, 'PATCH', apiFields(r))
      if (w.status !== 200) throw new Error(`seeding failed: ${JSON.stringify(w.json)}`)
    }
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await node?.stop()
  })

  /** A new browser context and page (desktop size unless told), its errors watched; nothing loaded yet. */
  async function newPage (opts: Parameters<Browser['newContext']>[0] = { viewport: { width: 1200, height: 800 } }): Promise<void> {
    ctx = await browser.newContext(opts)
    page = await ctx.newPage()
    errors = watchPageErrors(page)
  }
  async function openPage (path: string): Promise<void> {
    await newPage()
    await page.goto(node.url + path)
  }
  async function closePage (): Promise<void> {
    await ctx.close()
    expect(errors).toEqual([])
  }

  it('searches with the keyboard, opens a record showing every CID, walks back', async () => {
    await openPage('/')
    await expect.poll(async () => await page.locator('.summary').textContent()).toContain(`of ${RECORDS} records`)
    expect(await seriousA11yViolations(page)).toEqual([])
    await screenshot(page, 'library')

    // The record to find: its title words, and every CID the API gives it.
    const target = syntheticRecord(25) // "25" in its title (every fifth record carries its index)
    const title = target.fields.title
    const doc = await api<{ cids: string[], canonical_cid: string }>(`${node.url}/api/meta/${target.cid}`)
    expect(doc.json.cids.length).toBeGreaterThanOrEqual(2)
    const search = await api<{ total: number }>(`${node.url}/api/metadata/search`, 'POST', { query: title })

    // "/" focuses the search box from anywhere; Enter runs the search; the address carries it.
    await page.locator('h1').click()
    await page.keyboard.press('/')
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('q')
    await page.keyboard.type(title)
    await page.keyboard.press('Enter')
    await page.waitForURL(u => u.searchParams.get('q') === title)
    await expect.poll(async () => await page.locator('.summary').textContent()).toContain(`of ${search.json.total} matches`)
    const firstTitle = await page.locator('#results a.open').first().textContent()
    expect(firstTitle).toBe(title)
    expect(await page.locator('#results tbody tr').first().locator('td.cid code').getAttribute('title')).toBe(doc.json.canonical_cid)

    // Down arrow moves from the box into the results; Enter opens the focused one.
    await page.keyboard.press('ArrowDown')
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe(title)
    await page.keyboard.press('Enter')
    await page.waitForURL(u => u.pathname === `/cid/${doc.json.canonical_cid}`)
    await expect.poll(async () => await page.locator('#rec-title').textContent()).toBe(title)
    const shown = await page.locator('ul.cids li code').allTextContents()
    expect(shown.sort()).toEqual([...doc.json.cids].sort())
    const canonicalRow = page.locator('ul.cids li', { hasText: 'canonical' })
    expect(await canonicalRow.locator('code').textContent()).toBe(doc.json.canonical_cid)
    expect(await page.locator('ul.cids li button', { hasText: 'Copy' }).count()).toBe(doc.json.cids.length)
    // Every field is there, nested (fileinfo/… under a "fileinfo" branch) and with its version.
    expect(await page.locator('.field[data-field="fileinfo/streamdetails/video/0/codec"] .value').textContent()).toBe(target.fields['fileinfo/streamdetails/video/0/codec'])
    expect(await page.locator('table.versions tbody tr').count()).toBe(Object.keys(apiFields(target)).length)
    expect(await seriousA11yViolations(page)).toEqual([])
    await screenshot(page, 'record')

    // Escape closes the record (back to the search); the back button walks the views.
    await page.locator('#rec-title').click()
    await page.keyboard.press('Escape')
    await page.waitForURL(u => u.searchParams.get('q') === title)
    await page.goBack()
    await page.waitForURL(u => u.pathname.startsWith('/cid/'))
    await expect.poll(async () => await page.locator('#rec-title').textContent()).toBe(title)
    await page.goBack()
    await page.waitForURL(u => u.searchParams.get('q') === title)
    await page.goBack()
    await page.waitForURL(u => u.pathname === '/' && u.search === '')
    await expect.poll(async () => await page.locator('.summary').textContent()).toContain(`of ${RECORDS} records`)
    await closePage()
  })

  it('opens a record by any of its CIDs, a search by its address, and says when nothing is there', async () => {
    const target = syntheticRecord(7)
    const doc = await api<{ cids: string[], canonical_cid: string }>(`${node.url}/api/meta/${target.cid}`)
    const other = doc.json.cids.find(c => c !== doc.json.canonical_cid)!
    await openPage(`/cid/${other}`)
    await expect.poll(async () => await page.locator('#rec-title').textContent()).toBe(target.fields.title)

    await page.goto(`${node.url}/?q=${encodeURIComponent(`year:=${target.fields.year} type:${target.fields.type}`)}`)
    const expected = await api<{ total: number }>(`${node.url}/api/metadata/search`, 'POST', {
      filters: [{ property: 'year', values: [target.fields.year], exact: true }, { property: 'type', values: [target.fields.type], exact: false }]
    })
    expect(expected.json.total).toBeGreaterThan(0)
    await expect.poll(async () => await page.locator('.summary').textContent()).toContain(`of ${expected.json.total} matches`)

    // Paging: the next page has its own address and the true total stays.
    await page.goto(`${node.url}/`)
    await page.locator('a[rel="next"]').click()
    await page.waitForURL(u => u.searchParams.get('offset') === '50')
    await expect.poll(async () => await page.locator('.summary').textContent()).toContain(`51–${RECORDS} of ${RECORDS} records`)

    // Ordering by a field the API sorts by: the address carries it, and paging keeps it.
    await page.getByLabel('Order').selectOption('-year')
    await page.waitForURL(u => u.searchParams.get('sort') === '-year' && !u.searchParams.has('offset'))
    const newest = await api<{ results: Array<{ metadata: Record<string, string> }> }>(`${node.url}/api/metadata/search`, 'POST', { sort: '-year', limit: 50 })
    await expect.poll(async () => await page.locator('#results tbody tr td:nth-child(2)').allTextContents())
      .toEqual(newest.json.results.map(r => r.metadata.year))
    expect(newest.json.results[0].metadata.year).toBe(String(Math.max(...Array.from({ length: RECORDS },
      (_, i) => Number(syntheticRecord(i + 1).fields.year)))))
    await page.locator('a[rel="next"]').click()
    await page.waitForURL(u => u.searchParams.get('sort') === '-year' && u.searchParams.get('offset') === '50')

    await page.goto(`${node.url}/cid/bafkreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`)
    await expect.poll(async () => await page.locator('h1').textContent()).toBe('No record here')
    await closePage()
  })

  it('shows a write made through the API within 2 s, in the record and in the results', async () => {
    const target = syntheticRecord(12)
    await openPage(`/cid/${target.cid}`)
    await expect.poll(async () => await page.locator('#rec-title').textContent()).toBe(target.fields.title)
    await expect.poll(async () => await page.locator('.feed .dot').textContent()).toBe('live')

    const newTitle = `Renamed elsewhere ${Date.now()}`
    const t0 = Date.now()
    expect((await api(`${node.url}/meta/${target.cid}`, 'PATCH', { title: newTitle })).status).toBe(200)
    await page.locator('#rec-title', { hasText: newTitle }).waitFor({ timeout: 2000 })
    expect(Date.now() - t0).toBeLessThan(2000)
    // The activity feed names the change.
    await page.locator('.feed-list li', { hasText: 'title' }).first().waitFor({ timeout: 2000 })

    // A result row updates in place too.
    await page.goto(`${node.url}/?q=${encodeURIComponent('Renamed elsewhere')}`)
    await page.locator('#results a.open', { hasText: newTitle }).waitFor()
    const again = `${newTitle} (again)`
    const t1 = Date.now()
    expect((await api(`${node.url}/meta/${target.cid}`, 'PATCH', { title: again })).status).toBe(200)
    await page.locator('#results a.open', { hasText: again }).waitFor({ timeout: 2000 })
    expect(Date.now() - t1).toBeLessThan(2000)
    await closePage()
  })

  it('shows a write made before its event stream connected', async () => {
    // The page's first fetches may finish before the stream is there: a change in between is caught up when it goes live.
    const target = syntheticRecord(14)
    await newPage()
    let release!: () => void
    const held = new Promise<void>(resolve => { release = resolve })
    await page.route('**/api/events/meta', async route => { await held; await route.continue() })
    await page.goto(`${node.url}/cid/${target.cid}`)
    await expect.poll(async () => await page.locator('#rec-title').textContent()).toBe(target.fields.title)
    const newTitle = `Written while the stream was away ${Date.now()}`
    expect((await api(`${node.url}/meta/${target.cid}`, 'PATCH', { title: newTitle })).status).toBe(200)
    release()
    await page.locator('#rec-title', { hasText: newTitle }).waitFor({ timeout: 5000 })
    await closePage()
  })

  it('shows a write that crossed the results: read before it, rendered after the stream went live', async () => {
    // The search answers with the old title, the write lands, the stream goes live (its head after the write,
    // so the write is not sent), and only then do the stale results reach the page: they must be refreshed.
    const target = syntheticRecord(16)
    await newPage()
    let releaseStream!: () => void
    const streamHeld = new Promise<void>(resolve => { releaseStream = resolve })
    let releaseSearch!: () => void
    const searchHeld = new Promise<void>(resolve => { releaseSearch = resolve })
    let searched!: () => void
    const searchRead = new Promise<void>(resolve => { searched = resolve })
    let live!: () => void
    const streamLive = new Promise<void>(resolve => { live = resolve })
    await page.route('**/api/events/meta', async route => {
      await streamHeld
      await route.continue()
      live()
    })
    let first = true
    await page.route('**/api/search?**', async route => {
      if (!first) { await route.continue(); return }
      first = false
      const stale = await route.fetch() // answered by the node now, before the write
      searched()
      await searchHeld
      await route.fulfill({ response: stale })
    })
    await page.goto(`${node.url}/?q=${encodeURIComponent(target.fields.title)}`)
    await searchRead
    const newTitle = `${target.fields.title} crossed ${Date.now()}`
    expect((await api(`${node.url}/meta/${target.cid}`, 'PATCH', { title: newTitle })).status).toBe(200)
    releaseStream()
    await streamLive
    await expect.poll(async () => await page.locator('.feed .dot').textContent()).toBe('live')
    releaseSearch()
    await page.locator('#results a.open', { hasText: newTitle }).waitFor({ timeout: 5000 })
    await closePage()
  })

  it('lays the record out for a phone', async () => {
    await newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true })
    await page.goto(`${node.url}/?q=night`)
    await page.locator('#results a.open').first().waitFor()
    // Nothing wider than the screen: the results reflow rather than scroll sideways.
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
    expect(overflow).toBeLessThanOrEqual(0)
    expect(await seriousA11yViolations(page)).toEqual([])
    await screenshot(page, 'library-phone')
    // The record too: long CIDs and values wrap instead of widening the page.
    await page.locator('#results a.open').first().click()
    await page.locator('ul.cids li').first().waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0)
    await screenshot(page, 'record-phone')
    await closePage()
  })
})
