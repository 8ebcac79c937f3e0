/**
 * Values as people read them, in a real browser against a real node: a key
 * set (`scifi|noir`) as chips, `sizeByte` in MB, `mtimeNano` as a date (the
 * raw value in the title), and the activity list naming a changed record by
 * its title (or its file name), linked to it. At a phone's 390 px too, with
 * axe reporting no serious violation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser } from 'playwright-core'
import { HAVE_CHROMIUM, api, launchBrowser, seriousA11yViolations, startTestNode, watchPageErrors, type TestNode } from '../helpers/browser.js'
import { testCid } from '../helpers/record-ops.js'

describe.skipIf(!HAVE_CHROMIUM)('web page: values and activity as people read them', () => {
  let browser: Browser
  let node: TestNode
  beforeAll(async () => {
    ;[browser, node] = await Promise.all([launchBrowser(), startTestNode(['--enable-file-watcher=false'])])
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await node?.stop()
  })

  for (const width of [1280, 390]) {
    it(`shows key sets as chips, sizes in MB, nanosecond times as dates, and activity by title (${width} px)`, async () => {
      const cid = testCid(4500 + width)
      const ctx = await browser.newContext({ viewport: { width, height: 900 } })
      const page = await ctx.newPage()
      const errors = watchPageErrors(page)
      expect((await api(`${node.url}/meta/${cid}`, 'PATCH', { title: `Blue River ${width}`, genres: 'scifi|noir', sizeByte: '5000000', mtimeNano: '1700000000123456789' })).status).toBe(200)
      await page.goto(`${node.url}/cid/${cid}`)
      await page.locator('h1', { hasText: `Blue River ${width}` }).waitFor()
      const chips = page.locator('ul.chips li.chip')
      await expect.poll(async () => await chips.allTextContents()).toEqual(['scifi', 'noir'])
      const size = page.locator('span[title="5000000"]')
      expect(await size.textContent()).toBe('5.0 MB')
      const mtime = page.locator('span[title="1700000000123456789"]')
      // 1,700,000,000,123 ms: 14 Nov 2023, 22:13:20 UTC, in the browser's zone.
      expect(await mtime.textContent()).toBe(new Date(1_700_000_000_123).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'medium' }))

      // A change seen on the stream: the activity list names the record by its title and links to it.
      expect((await api(`${node.url}/meta/${cid}`, 'PATCH', { year: '1999' })).status).toBe(200)
      const link = page.locator('.feed-list a', { hasText: `Blue River ${width}` })
      await link.first().waitFor()
      expect(await link.first().getAttribute('href')).toMatch(/^\/cid\/[0-9A-Z]{26}$/)
      if (width === 390) expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
      expect(await seriousA11yViolations(page)).toEqual([])
      await ctx.close()
      expect(errors).toEqual([])
    })
  }

  it('names a record without a title by its file name', async () => {
    const cid = testCid(4599)
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const page = await ctx.newPage()
    const errors = watchPageErrors(page)
    await page.goto(`${node.url}/`)
    await page.locator('.feed').waitFor()
    await page.waitForFunction(() => document.querySelector('.feed .dot.live') !== null)
    expect((await api(`${node.url}/meta/${cid}`, 'PATCH', { fileName: 'holiday-2019.mkv' })).status).toBe(200)
    await page.locator('.feed-list a', { hasText: 'holiday-2019.mkv' }).first().waitFor()
    await ctx.close()
    expect(errors).toEqual([])
  })
})
