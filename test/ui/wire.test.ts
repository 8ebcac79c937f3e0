/**
 * The page's wire types (ui/src/wire.ts) are written by hand, because the
 * page loads nothing of src/. This holds them to the node's own OpenAPI
 * document (built from the route schemas, `/docs/json`): every field the
 * page reads must be one the route declares, with the same type, the same
 * nullability and the same enum values, and a field the page takes as
 * always present must be required where the route says which are. Where a
 * route leaves its answer open (`additionalProperties: true`), the fields
 * are checked against a real answer of a node instead.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

/** A type of wire.ts, reduced to what a JSON schema says. */
type Shape =
  | { kind: 'string', enum?: string[] }
  | { kind: 'number' | 'boolean' | 'unknown' }
  | { kind: 'array', items: Shape }
  | { kind: 'map', values: Shape }
  | { kind: 'object', fields: Map<string, { shape: Shape, optional: boolean, nullable: boolean }> }

const source = ts.createSourceFile('wire.ts', fs.readFileSync(path.join(root, 'ui/src/wire.ts'), 'utf8'), ts.ScriptTarget.ES2022, true)
const interfaces = new Map<string, ts.InterfaceDeclaration>()
source.forEachChild(n => { if (ts.isInterfaceDeclaration(n)) interfaces.set(n.name.text, n) })

function membersShape (members: ts.NodeArray<ts.TypeElement>): Shape {
  const fields = new Map<string, { shape: Shape, optional: boolean, nullable: boolean }>()
  for (const m of members) {
    if (!ts.isPropertySignature(m) || m.type === undefined) continue
    const parts = ts.isUnionTypeNode(m.type) ? [...m.type.types] : [m.type]
    const isNull = (t: ts.TypeNode): boolean => ts.isLiteralTypeNode(t) && t.literal.kind === ts.SyntaxKind.NullKeyword
    const rest = parts.filter(t => !isNull(t))
    const shape = rest.length === 1 ? shapeOf(rest[0]!) : unionShape(rest)
    fields.set(m.name.getText(), { shape, optional: m.questionToken !== undefined, nullable: rest.length < parts.length })
  }
  return { kind: 'object', fields }
}

function unionShape (types: ts.TypeNode[]): Shape {
  const values = types.map(t => (ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal) ? t.literal.text : undefined))
  if (values.every(v => v !== undefined)) return { kind: 'string', enum: values.sort() }
  throw new Error(`wire.ts: a union the test does not read: ${types.map(t => t.getText()).join(' | ')}`)
}

function shapeOf (t: ts.TypeNode): Shape {
  switch (t.kind) {
    case ts.SyntaxKind.StringKeyword: return { kind: 'string' }
    case ts.SyntaxKind.NumberKeyword: return { kind: 'number' }
    case ts.SyntaxKind.BooleanKeyword: return { kind: 'boolean' }
  }
  if (ts.isArrayTypeNode(t)) return { kind: 'array', items: shapeOf(t.elementType) }
  if (ts.isTypeLiteralNode(t)) return membersShape(t.members)
  if (ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal)) return { kind: 'string', enum: [t.literal.text] }
  if (ts.isTypeReferenceNode(t)) {
    const name = t.typeName.getText()
    if (name === 'Record' && t.typeArguments?.length === 2) return { kind: 'map', values: shapeOf(t.typeArguments[1]!) }
    const decl = interfaces.get(name)
    if (decl !== undefined) return membersShape(decl.members)
  }
  throw new Error(`wire.ts: a type the test does not read: ${t.getText()}`)
}

const wire = (name: string): Shape => membersShape(interfaces.get(name)!.members)

interface Schema {
  type?: string
  enum?: string[]
  nullable?: boolean
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  additionalProperties?: boolean | Schema
  $ref?: string
}

/** Where the wire type and the schema disagree, one line each (`where` names the field). */
function compare (shape: Shape, schema: Schema, where: string, doc: { components?: { schemas?: Record<string, Schema> } }, open: string[]): string[] {
  if (schema.$ref !== undefined) schema = doc.components!.schemas![schema.$ref.split('/').pop()!]!
  const type = schema.type
  switch (shape.kind) {
    case 'string':
      if (type !== 'string') return [`${where}: the page reads a string, the route says ${type}`]
      if (shape.enum !== undefined && JSON.stringify(shape.enum) !== JSON.stringify([...(schema.enum ?? [])].sort())) {
        return [`${where}: the page's values ${shape.enum.join('|')}, the route's ${(schema.enum ?? ['any string']).join('|')}`]
      }
      return []
    case 'number': return type === 'number' || type === 'integer' ? [] : [`${where}: the page reads a number, the route says ${type}`]
    case 'boolean': return type === 'boolean' ? [] : [`${where}: the page reads a boolean, the route says ${type}`]
    case 'unknown': return []
    case 'array': return type === 'array' ? compare(shape.items, schema.items ?? {}, `${where}[]`, doc, open) : [`${where}: the page reads an array, the route says ${type}`]
    case 'map':
      if (type !== 'object') return [`${where}: the page reads an object, the route says ${type}`]
      return typeof schema.additionalProperties === 'object' ? compare(shape.values, schema.additionalProperties, `${where}{}`, doc, open) : []
    case 'object': {
      if (type !== 'object') return [`${where}: the page reads an object, the route says ${type}`]
      if (schema.properties === undefined) {
        // An open answer (additionalProperties: true): checked against a real one instead.
        open.push(where)
        return []
      }
      const out: string[] = []
      for (const [name, f] of shape.fields) {
        const at = `${where}.${name}`
        const p = schema.properties[name]
        if (p === undefined) { out.push(`${at}: the page reads it, the route does not declare it`); continue }
        if (f.nullable !== (p.nullable === true)) out.push(`${at}: ${f.nullable ? 'nullable' : 'not nullable'} for the page, ${p.nullable === true ? 'nullable' : 'not nullable'} for the route`)
        if (!f.optional && schema.required !== undefined && !schema.required.includes(name)) out.push(`${at}: always present for the page, optional for the route`)
        out.push(...compare(f.shape, p, at, doc, open))
      }
      return out
    }
  }
}

/** Each wire type and the route answer (or body) it stands for. */
const ROUTES: Array<[type: string, method: string, route: string, part: 'response' | 'body']> = [
  ['Health', 'get', '/health', 'response'],
  ['Status', 'get', '/status', 'response'],
  ['Stats', 'get', '/api/stats', 'response'],
  // The page searches through GET /api/search (its query string is built by api.ts, not a wire type).
  ['SearchResponse', 'get', '/api/search', 'response'],
  ['RecordView', 'get', '/api/records/{hash}', 'response'],
  ['FileInfo', 'get', '/api/file/{cid}/info', 'response'],
  ['MeshStatus', 'get', '/api/mesh', 'response'],
  ['MeshDigest', 'get', '/api/mesh/digest', 'response'],
  ['MeshDigests', 'get', '/api/mesh/digests', 'response'],
  ['ErrorEnvelope', 'get', '/status', 'response']
]

let h: ApiHarness
let doc: { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Schema }> }, responses: Record<string, { content?: Record<string, { schema: Schema }> }> }>>, components?: { schemas?: Record<string, Schema> } }
beforeAll(async () => {
  h = await startApi()
  doc = (await h.app.inject({ url: '/docs/json' })).json()
})
afterAll(async () => { await h.close() })

describe('ui/src/wire.ts against the OpenAPI document', () => {
  it.each(ROUTES)('%s is what %s %s declares', (type, method, route, part) => {
    const op = doc.paths[route]?.[method]
    expect(op, `${method} ${route} in the document`).toBeDefined()
    const status = type === 'ErrorEnvelope' ? '400' : '200'
    const schema = part === 'body' ? op!.requestBody!.content['application/json']!.schema : op!.responses[status]!.content!['application/json']!.schema
    const open: string[] = []
    expect(compare(wire(type), schema, type, doc, open)).toEqual([])
    // Only the watcher's status is left open by its routes; it is checked against a real answer below.
    expect(open.every(w => w === 'Status.watcher')).toBe(true)
  })

  it('WatcherStatus and WatcherProgress hold the fields a node answers (their routes leave the answer open)', async () => {
    const r = (await h.app.inject({ url: '/api/watchers' })).json() as { watchers: Array<Record<string, unknown>> }
    expect(r.watchers.length).toBeGreaterThan(0)
    const w = r.watchers[0]!
    const fields = (name: string): Map<string, { optional: boolean }> => (wire(name) as Extract<Shape, { kind: 'object' }>).fields
    for (const [name, f] of fields('WatcherStatus')) if (!f.optional) expect(w, `WatcherStatus.${name}`).toHaveProperty(name)
    for (const [name, f] of fields('WatcherProgress')) if (!f.optional) expect(w.progress, `WatcherProgress.${name}`).toHaveProperty(name)
    const status = (await h.app.inject({ url: '/status' })).json() as { watcher: Record<string, unknown> | null }
    expect(status.watcher).not.toBeNull()
    for (const [name, f] of fields('WatcherStatus')) if (!f.optional) expect(status.watcher, `Status.watcher.${name}`).toHaveProperty(name)
  })

  it('would catch a field the route does not declare, a type that differs, and a nullability that differs', () => {
    const schema: Schema = { type: 'object', required: ['a'], properties: { a: { type: 'integer' }, b: { type: 'string', enum: ['x', 'y'] }, c: { type: 'string' } } }
    const shape = membersShape(ts.createSourceFile('t.ts', 'interface T { a: string, b: \'x\' | \'z\', c: string | null, d: number }', ts.ScriptTarget.ES2022, true)
      .statements.filter(ts.isInterfaceDeclaration)[0]!.members)
    const found = compare(shape, schema, 'T', doc, [])
    expect(found.find(l => l.startsWith('T.a:'))).toMatch(/reads a string, the route says integer/)
    expect(found.find(l => l.startsWith('T.b:') && l.includes('values'))).toMatch(/x\|z, the route's x\|y/)
    expect(found.find(l => l.startsWith('T.c:') && l.includes('nullable'))).toMatch(/nullable for the page, not nullable for the route/)
    expect(found.find(l => l.startsWith('T.d:'))).toMatch(/does not declare it/)
    expect(found.find(l => l.startsWith('T.b:') && l.includes('optional'))).toMatch(/always present for the page, optional for the route/)
  })
})
