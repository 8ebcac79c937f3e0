/**
 * The node serves ui/dist as committed (no build step at install or start,
 * so a production image needs no dev dependency). This keeps it honest: the
 * committed files must be exactly what `npm run build:ui` makes from
 * ui/src today, and they load nothing from anywhere but the node.
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { DIST_DIR, buildUi } from '../../ui/build.js'

describe('ui/dist', () => {
  it('is the build of ui/src as it stands (run npm run build:ui after changing the page)', async () => {
    const built = await buildUi()
    const committed = fs.readdirSync(DIST_DIR).sort()
    expect(committed, 'ui/dist holds other files than the build makes: run npm run build:ui').toEqual([...built.keys()].sort())
    for (const [name, body] of built) {
      const same = fs.readFileSync(path.join(DIST_DIR, name)).equals(body)
      expect(same, `ui/dist/${name} is stale: run npm run build:ui and commit it`).toBe(true)
    }
  })

  it('references no other host: every asset comes from the node', () => {
    // XML namespace names are identifiers, not fetched; the two others are placeholder text in the mesh form.
    const allowed = new Set(['http://www.w3.org/1998/Math/MathML', 'http://www.w3.org/1999/xhtml', 'http://www.w3.org/2000/svg', 'http://127.0.0.1:9001', 'http://host:port'])
    for (const name of fs.readdirSync(DIST_DIR)) {
      const text = fs.readFileSync(path.join(DIST_DIR, name), 'utf8')
      const urls = [...text.matchAll(/(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}[^\s"'`)]*/gi)].map(m => m[0]).filter(u => !allowed.has(u))
      expect(urls, name).toEqual([])
      expect(text).not.toMatch(/@import\s+url\(/)
    }
  })
})
