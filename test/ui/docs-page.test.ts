/**
 * The /docs page in a real browser: swagger-ui renders the node's routes
 * from the node's own assets and document, with no error and no request to
 * any other site.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser } from 'playwright-core'
import { HAVE_CHROMIUM, launchBrowser, startTestNode, watchPageErrors, type TestNode } from '../helpers/browser.js'

describe.skipIf(!HAVE_CHROMIUM)('the /docs page', () => {
  let browser: Browser
  let node: TestNode

  beforeAll(async () => {
    ;[browser, node] = await Promise.all([launchBrowser(), startTestNode()])
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await node?.stop()
  })

  it('renders every route group from the node alone', async () => {
    const ctx = await browser.newContext()
    const page = await ctx.newPage()
    const errors = watchPageErrors(page)
    const elsewhere: string[] = []
    const origin = new URL(node.url).origin
    page.on('request', r => { if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) elsewhere.push(r.url()) })
    await page.goto(`${node.url}/docs`)
    await page.locator('.opblock').first().waitFor()
    const paths = await page.locator('.opblock-summary-path').allTextContents()
    expect(paths.map(p => p.replace(/\u200b/g, ''))).toEqual(expect.arrayContaining(['/api/meta/{cid}', '/meta/{hash}', '/api/metadata/batch']))
    expect(await page.locator('.title').first().textContent()).toContain('meta-core')
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await ctx.close()
  })
})
