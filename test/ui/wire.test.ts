/**
 * The page's wire types (ui/src/wire.ts) are the node's own schemas
 * (src/api/wire/), taken as types: the page's type check reads the same
 * definitions that validate, serialize and document each route, so a field
 * renamed or retyped there fails `npm run typecheck` where the page reads
 * it. These hold the arrangement in place: wire.ts declares no API shape of
 * its own (a hand copy would drift again), and nothing of src/ or TypeBox
 * reaches the page's bundle (types only).
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { bundleInputs } from '../../ui/build.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

/** Types the page makes itself, not answers of the API. */
const PAGE_OWN = ['StreamEvent']

/** What a module's source declares: types re-exported from src/api/wire/, and everything else by name. */
function declarations (text: string): { fromSchemas: string[], other: string[] } {
  const source = ts.createSourceFile('wire.ts', text, ts.ScriptTarget.ES2022, true)
  const fromSchemas: string[] = []
  const other: string[] = []
  for (const s of source.statements) {
    const from = ts.isExportDeclaration(s) && s.moduleSpecifier !== undefined && ts.isStringLiteral(s.moduleSpecifier) ? s.moduleSpecifier.text : undefined
    if (ts.isExportDeclaration(s) && s.isTypeOnly && from?.startsWith('../../src/api/wire/') === true && s.exportClause !== undefined &&
      ts.isNamedExports(s.exportClause)) {
      fromSchemas.push(...s.exportClause.elements.map(e => e.name.text))
    } else if (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s)) {
      other.push(s.name.text)
    } else {
      other.push(s.getText().slice(0, 80))
    }
  }
  return { fromSchemas, other }
}

describe('ui/src/wire.ts', () => {
  it('takes every API shape from the node\'s schemas, as types', () => {
    const d = declarations(fs.readFileSync(path.join(root, 'ui/src/wire.ts'), 'utf8'))
    expect(d.other).toEqual(PAGE_OWN)
    expect(d.fromSchemas).toEqual(expect.arrayContaining(['ErrorEnvelope', 'Health', 'Status', 'Stats', 'SearchResponse', 'RecordView', 'FileInfo',
      'MeshStatus']))
  })

  it('would catch a shape written out by hand, or one taken as a value', () => {
    const d = declarations([
      "export type { Health } from '../../src/api/wire/system.js'",
      "export { Stats } from '../../src/api/wire/system.js'",
      'export interface Status { status: string }'
    ].join('\n'))
    expect(d.fromSchemas).toEqual(['Health'])
    expect(d.other).toEqual(["export { Stats } from '../../src/api/wire/system.js'", 'Status'])
  })

  it('leaves nothing of src/ or TypeBox in the page\'s bundle', async () => {
    const inputs = await bundleInputs()
    expect(inputs.some(f => f.startsWith('src/'))).toBe(true) // the page's own sources, relative to ui/
    expect(inputs.filter(f => f.includes('../src/') || f.includes('typebox') || f.includes('fastify'))).toEqual([])
  })
})
