/**
 * The type-aware rules and the line length of eslint.config.js bite: each
 * fixture in test/lint/fixtures/ breaks the rule it is named after, and is
 * linted with the project's own configuration (ignores off: `npm run lint`
 * skips the folder). A rule dropped from the configuration, or one that stops
 * reporting, fails here.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { ESLint } from 'eslint'
import { beforeAll, describe, expect, it } from 'vitest'
// @ts-expect-error: the config is plain JavaScript, without type declarations
import { TYPE_RULES } from '../../eslint.config.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const FIXTURES = path.join(root, 'test/lint/fixtures')
/** The rules the fixtures break, by their file names: a rule dropped from the configuration fails its case below. */
const BROKEN = fs.readdirSync(FIXTURES).filter(f => f.endsWith('.ts') && !f.endsWith('-allowed.ts')).map(f => f.slice(0, -3)).sort()
const CONFIGURED = Object.keys(TYPE_RULES as Record<string, unknown>).map(r => r.replace('@typescript-eslint/', ''))

/** Each fixture's file name (without `.ts`) → the rules reported on it. */
const reported = new Map<string, string[]>()

beforeAll(async () => {
  // One lint of the whole folder: the type information is built once for all the fixtures.
  const results = await new ESLint({ cwd: root, ignore: false }).lintFiles([FIXTURES])
  for (const r of results) {
    reported.set(path.basename(r.filePath, '.ts'), r.messages.map(m => (m.ruleId ?? `parse: ${m.message}`).replace('@typescript-eslint/', '')))
  }
}, 120_000)

describe('lint rules (eslint.config.js) on fixtures that break them', () => {
  it('has a fixture for each type-aware rule configured, no-misused-promises and max-len among them', () => {
    expect(BROKEN).toEqual(expect.arrayContaining(['no-misused-promises', 'no-floating-promises', 'max-len']))
    expect(CONFIGURED.filter(r => !BROKEN.includes(r))).toEqual([])
  })

  it.each(BROKEN)('%s reports its fixture', rule => {
    expect(reported.get(rule)).toContain(rule)
  })

  it('max-len lets through a line of 160 and a longer one whose length is a message', () => {
    expect(reported.get('max-len-allowed')).toEqual([])
  })
})
