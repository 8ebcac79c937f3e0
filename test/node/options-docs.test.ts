/**
 * The README's configuration table and docs/configuration.md list every
 * option of the node, with its flag and its default, so the docs cannot
 * fall behind config.ts.
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { OPTIONS } from '../../src/node/index.js'
import { ROOT } from '../helpers/compose.js'

/** Table rows `| \`ENV\` | \`--flag\`… | default | … |` of a markdown file, by variable. */
function optionRows (file: string): Map<string, string[]> {
  const rows = new Map<string, string[]>()
  for (const line of fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n')) {
    const cells = line.split('|').slice(1, -1).map(c => c.trim())
    const env = /^`([A-Z0-9_]+)`$/.exec(cells[0] ?? '')?.[1]
    if (env !== undefined && cells.length >= 4) rows.set(env, cells)
  }
  return rows
}

describe('option tables', () => {
  for (const file of ['README.md', 'docs/configuration.md']) {
    it(`${file} lists every option with its flag and default`, () => {
      const rows = optionRows(file)
      for (const o of OPTIONS) {
        const row = rows.get(o.env ?? '')
        expect(row, `${o.env ?? o.flag} in ${file}`).toBeDefined()
        expect(row?.[1]).toContain(`\`--${o.flag}\``)
        const def = row?.[2] ?? ''
        if (o.def === undefined) expect(def).toMatch(/^(unset|`<)/)
        else if (o.def === '') expect(def).toBe('empty')
        else expect(def).toBe(`\`${o.def}\``)
      }
      expect([...rows.keys()].filter(env => !OPTIONS.some(o => o.env === env))).toEqual([])
    })
  }
})
