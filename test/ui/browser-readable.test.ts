/**
 * Values as people read them, in a real browser against a real node: a key
 * set (`scifi|noir`) as chips, `sizeByte` in MB, `mtimeNano` as a date (the
 * raw value in the title), and the activity list naming a changed record by
 * its title (or its file name), linked to it. At a phone's 390 px too, with
 * axe reporting no serious violation. The size and time come from a real
 * file registered in the library: clients cannot write those fields.
 */
import fs from 'node:fs'
import path from 'node:path'
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
      // A sparse 5,000,000-byte file whose mtime is 1,700,000,000.123 s, registered as the watcher would record it.
      const rel = `plugin/blue-river-${width}.bin`
      const file = path.join(node.filesPath, rel)
      fs.mkdirSync(path.dirname(file), { recursive: true })
      // Distinct bytes in the middle MiB, which midhash256 samples: the two widths are two contents.
      fs.writeFileSync(file, '')
      fs.truncateSync(file, 5_000_000)
      const fd = fs.openSync(file, 'r+')
      fs.writeSync(fd, `blue river ${width}`, 2_500_000)
      fs.closeSync(fd)
      fs.utimesSync(file, 1_700_000_000.123, 1_700_000_000.123)
      const reg = await api<{ cid: string }>(`${node.url}/api/files/register`, 'POST', { path: rel })
      expect(reg.status).toBe(201)
      const cid = reg.json.cid
      const mtimeNano = (await api<{ metadata: Record<string, string> }>(`${node.url}/api/meta/${cid}`)).json.metadata.mtimeNano
      const ctx = await browser.newContext({ viewport: { width, height: 900 } })
      const page = await ctx.newPage()
      const errors = watchPageErrors(page)
      expect((await api(`${node.url}/meta/${cid}`, 'PATCH', { title: `Blue River ${width}`, genres: 'scifi|noir' })).status).toBe(200)
      await page.goto(`${node.url}/cid/${cid}`)
      await page.locator('h1', { hasText: `Blue River ${width}` }).waitFor()
      const chips = page.locator('ul.chips li.chip')
      await expect.poll(async () => await chips.allTextContents()).toEqual(['scifi', 'noir'])
      const size = page.locator('span[title="5000000"]')
      expect(await size.textContent()).toBe('5.0 MB')
      const mtime = page.locator(`span[title="${mtimeNano}"]`)
      // About 1,700,000,000,123 ms: 14 Nov 2023, 22:13:20 UTC, in the browser's zone.
      expect(await mtime.textContent()).toBe(new Date(Number(BigInt(mtimeNano) / 1_000_000n)).toLocaleString('en-GB',
        { dateStyle: 'medium', timeStyle: 'medium' }))

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
