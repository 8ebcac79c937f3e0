/**
 * Editing through the page on a node with an API token: the page asks for
 * the token when the node refuses, keeps it for the tab only, writes
 * through the API's routes (a reload shows the change), shows the API's own
 * message when a write is refused, and warns when a field changes
 * elsewhere while it is being edited.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { apiFields, syntheticRecord } from '../../bench/lib/synthetic.js'
import {
  HAVE_CHROMIUM, api, launchBrowser, screenshot, seriousA11yViolations, startTestNode, watchPageErrors, type TestNode
} from '../helpers/browser.js'

const TOKEN = 'ui-test-token-0123456789'

describe.skipIf(!HAVE_CHROMIUM)('web page: editing on a node with a token', () => {
  let browser: Browser
  let node: TestNode
  const rec = syntheticRecord(3)
  const get = async (): Promise<Record<string, string>> =>
    (await api<{ metadata: Record<string, string> }>(`${node.url}/api/meta/${rec.cid}`)).json.metadata

  beforeAll(async () => {
    ;[browser, node] = await Promise.all([launchBrowser(), startTestNode(['--enable-file-watcher=false', '--api-token', TOKEN])])
    expect((await api(`${node.url}/meta/${rec.cid}`, 'PATCH', apiFields(rec), TOKEN)).status).toBe(200)
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await node?.stop()
  })

  async function open (): Promise<{ ctx: BrowserContext, page: Page, errors: string[] }> {
    const ctx = await browser.newContext()
    const page = await ctx.newPage()
    return { ctx, page, errors: watchPageErrors(page) }
  }

  async function enterToken (page: Page, token: string): Promise<void> {
    const dialog = page.locator('dialog[open]')
    await dialog.waitFor()
    await dialog.locator('#token-input').fill(token)
    await dialog.locator('button[type="submit"]').click()
  }

  it('asks for the token, saves an edit that a reload shows, and refuses one without the token', async () => {
    const { ctx, page, errors } = await open()
    await page.goto(`${node.url}/cid/${rec.cid}`)

    // The node refuses the read: the dialog quotes it. A wrong token is refused again, with the node's word.
    const dialog = page.locator('dialog[open]')
    await dialog.waitFor()
    expect(await dialog.textContent()).toContain('this route needs Authorization: Bearer <token>')
    expect(await seriousA11yViolations(page)).toEqual([])
    await screenshot(page, 'token')
    await enterToken(page, 'not-the-token')
    await expect.poll(async () => await dialog.textContent()).toContain('wrong token')
    await enterToken(page, TOKEN)
    await expect.poll(async () => await page.locator('#rec-title').textContent()).toBe(rec.fields.title)
    // Kept in this tab's session storage only.
    expect(await page.evaluate(() => ({ session: sessionStorage.length, local: localStorage.length }))).toEqual({ session: 1, local: 0 })

    // Edit a field: the write goes through the API, and a reload shows it.
    const row = page.locator('.field[data-field="title"]')
    await row.getByRole('button', { name: 'Edit title' }).click()
    const input = row.getByLabel('New value of title')
    await input.fill('Edited in the browser')
    await input.press('Enter')
    await row.locator('.value', { hasText: 'Edited in the browser' }).waitFor()
    expect((await get()).title).toBe('Edited in the browser')
    await page.reload()
    await expect.poll(async () => await page.locator('#rec-title').textContent()).toBe('Edited in the browser')
    expect(await page.locator('dialog[open]').count()).toBe(0)

    // Without the token the write is refused: the page shows the API's own message, and nothing changed.
    await page.getByRole('button', { name: 'Forget token' }).click()
    const year = page.locator('.field[data-field="year"]')
    await year.getByRole('button', { name: 'Edit year' }).click()
    await year.getByLabel('New value of year').fill('2099')
    await year.getByRole('button', { name: 'Save' }).click()
    await dialog.waitFor()
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await expect.poll(async () => await year.locator('.error').textContent()).toBe('unauthorized: this route needs Authorization: Bearer <token>')
    expect((await get()).year).toBe(rec.fields.year)

    // Saving again asks again; with the token it goes through.
    await year.getByRole('button', { name: 'Save' }).click()
    await enterToken(page, TOKEN)
    await year.locator('.value', { hasText: '2099' }).waitFor()
    expect((await get()).year).toBe('2099')
    await ctx.close()
    expect(errors).toEqual([])
  })

  it('adds and deletes fields, adds a CID, shows refusals and concurrent changes', async () => {
    const { ctx, page, errors } = await open()
    await page.goto(`${node.url}/`)
    await enterToken(page, TOKEN)
    await page.goto(`${node.url}/cid/${rec.cid}`)
    await page.locator('#rec-title').waitFor()

    // Add a nested field.
    await page.getByLabel('Field path').fill('titles/deu')
    await page.getByLabel('Value', { exact: true }).fill('Der Titel')
    await page.getByRole('button', { name: 'Add field' }).click()
    await page.locator('.field[data-field="titles/deu"] .value', { hasText: 'Der Titel' }).waitFor()
    expect((await get())['titles/deu']).toBe('Der Titel')

    // A field the API refuses: its message, as the API wrote it.
    await page.getByLabel('Field path').fill('midhash256')
    await page.getByLabel('Value', { exact: true }).fill('x')
    await page.getByRole('button', { name: 'Add field' }).click()
    await expect.poll(async () => await page.locator('form.add .error').first().textContent()).toMatch(/^deprecated_field: /)

    // Delete a field (two steps: Delete, then confirm).
    const domain = page.locator('.field[data-field="domain"]')
    await domain.getByRole('button', { name: 'Delete domain' }).click()
    await domain.getByRole('button', { name: 'Delete domain' }).click()
    await domain.waitFor({ state: 'detached' })
    expect((await get()).domain).toBeUndefined()

    // Add a CID: a bad one is refused with the API's message, a good one joins the list.
    await page.getByLabel('Add a CID').fill('not-a-cid')
    await page.getByRole('button', { name: 'Add CID' }).click()
    await expect.poll(async () => await page.locator('form.add.inline .error').textContent()).toMatch(/^invalid_field: .*not a valid cid/)
    const newCid = syntheticRecord(1000).cid
    await page.getByLabel('Add a CID').fill(newCid)
    await page.getByRole('button', { name: 'Add CID' }).click()
    await page.locator('ul.cids code', { hasText: newCid }).waitFor()
    expect((await get())[`cids/${newCid}`]).toBe('true')

    // A field changed elsewhere while it is edited: the editor says so before overwriting.
    const title = page.locator('.field[data-field="title"]')
    await title.getByRole('button', { name: 'Edit title' }).click()
    await title.getByLabel('New value of title').fill('Mine')
    expect((await api(`${node.url}/meta/${rec.cid}`, 'PATCH', { title: 'Theirs' }, TOKEN)).status).toBe(200)
    await expect.poll(async () => await title.locator('.warn').textContent(), { timeout: 2000 }).toContain('Changed elsewhere while you edit: now Theirs. Saving overwrites it.')
    expect(await seriousA11yViolations(page)).toEqual([])
    await screenshot(page, 'edit')
    // Escape cancels the edit; the record stays open.
    await title.getByLabel('New value of title').press('Escape')
    await title.locator('.value', { hasText: 'Theirs' }).waitFor()
    expect(new URL(page.url()).pathname).toBe(`/cid/${rec.cid}`)
    await ctx.close()
    expect(errors).toEqual([])
  })
  it('offers no Edit or Delete on the location fields, which only a node\'s watcher writes', async () => {
    // What a watcher writes (the record layer's own write, as for a file on this node's disk).
    await node.node.store.records.mergeFlat(rec.cid, { filePath: '/files/films/own.mkv', sizeByte: '42', mtimeNano: '7' })
    const { ctx, page, errors } = await open()
    await page.goto(`${node.url}/`)
    await enterToken(page, TOKEN)
    await page.goto(`${node.url}/cid/${rec.cid}`)
    const filePath = page.locator('.field[data-field="filePath"]')
    await filePath.locator('.value', { hasText: '/files/films/own.mkv' }).waitFor()
    for (const f of ['filePath', 'sizeByte', 'mtimeNano']) {
      const row = page.locator(`.field[data-field="${f}"]`)
      expect(await row.getByRole('button').count(), f).toBe(0)
    }
    // Other fields keep theirs.
    expect(await page.locator('.field[data-field="year"]').getByRole('button', { name: 'Edit year' }).count()).toBe(1)
    expect((await api(`${node.url}/meta/${rec.cid}`, 'PATCH', { filePath: '/files/oops.mkv' }, TOKEN)).status).toBe(400)
    await ctx.close()
    expect(errors).toEqual([])
  })
})
