/**
 * JSON bodies the store could not hold faithfully are refused whole:
 * invalid UTF-8, lone UTF-16 surrogates (keys and values), prototype keys.
 * Each refusal is a 400 that says why, and the store is left byte for byte
 * as it was.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startApi, type ApiHarness } from '../helpers/api-harness.js'

const CID = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e'
let h: ApiHarness

beforeEach(async () => {
  h = await startApi()
  await h.app.inject({ method: 'PATCH', url: `/meta/${CID}`, payload: { title: 'before' } })
})
afterEach(async () => { await h.close() })

/** Every row of the store, keys and values as the bytes SQLite holds. */
function snapshot (): string {
  return JSON.stringify(h.store.kv.range('', '\u{10FFFF}').filter(([k]) => !k.startsWith('ev:') && !k.startsWith('evhwm:')))
}

const json = { 'content-type': 'application/json' }

async function refused (method: 'PATCH' | 'PUT' | 'POST', url: string, payload: string | Buffer): Promise<{ error: string, message: string }> {
  const before = snapshot()
  const r = await h.app.inject({ method, url, headers: json, payload })
  expect(r.statusCode, `${method} ${url} ${payload.toString()}`).toBe(400)
  expect(snapshot()).toBe(before)
  return r.json()
}

describe('JSON bodies that the store cannot hold faithfully', () => {
  it('a lone surrogate in a field name or a value is a 400 invalid_value, on every write route', async () => {
    const cases: Array<['PATCH' | 'PUT' | 'POST', string, string]> = [
      ['PATCH', `/meta/${CID}`, '{"k\\ud800":"v"}'],
      ['PATCH', `/meta/${CID}`, '{"k":"v\\udfff"}'],
      ['PUT', `/meta/${CID}`, '{"title":"x\\ud83d"}'],
      ['PUT', `/meta/${CID}/title`, '{"value":"\\ud800"}'],
      ['POST', `/meta/${CID}/_add/tags`, '{"value":"a\\udc00b"}'],
      ['PUT', '/api/kv/value', '{"key":"btmagnet:\\ud800","value":"x"}'],
      ['PUT', '/api/kv/value', '{"key":"btmagnet:k","value":"\\ud800"}'],
      ['PUT', `/api/metadata/${CID}`, '{"k\\udbff":"v"}']
    ]
    for (const [method, url, body] of cases) {
      const e = await refused(method, url, body)
      expect(e.error, body).toBe('invalid_value')
      expect(e.message, body).toMatch(/lone UTF-16 surrogate/)
    }
  })

  it('a surrogate pair (an emoji) is text like any other', async () => {
    const r = await h.app.inject({ method: 'PATCH', url: `/meta/${CID}`, headers: json, payload: '{"mood\\ud83d\\ude00":"\\ud83d\\ude00"}' })
    expect(r.statusCode).toBe(200)
    expect((await h.app.inject({ url: `/meta/${CID}/mood%F0%9F%98%80` })).body).toBe('\u{1F600}')
  })

  it('bytes that are not UTF-8 are a 400 invalid_value, not U+FFFD', async () => {
    for (const bad of [
      Buffer.concat([Buffer.from('{"title":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
      Buffer.concat([Buffer.from('{"t'), Buffer.from([0xc3]), Buffer.from('":"v"}')]),
      Buffer.concat([Buffer.from('{"title":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]) // a surrogate spelled in bytes (CESU-8)
    ]) {
      const e = await refused('PATCH', `/meta/${CID}`, bad)
      expect(e).toMatchObject({ error: 'invalid_value', message: 'body is not valid UTF-8' })
    }
    expect((await h.app.inject({ url: `/meta/${CID}/title` })).body).toBe('before')
  })

  it('a __proto__ key, or constructor.prototype, is refused with a message that names it', async () => {
    for (const body of ['{"__proto__":{"polluted":"yes"}}', '{"a":{"__proto__":"x"}}', '{"\\u005f_proto__":{"p":"1"}}']) {
      const e = await refused('PATCH', `/meta/${CID}`, body)
      expect(e).toEqual({ error: 'schema_violation', message: 'the key "__proto__" is not allowed in a JSON body', retryable: false })
    }
    const c = await refused('PATCH', `/meta/${CID}`, '{"constructor":{"prototype":{"p":"1"}}}')
    expect(c.message).toMatch(/"constructor" key holding "prototype"/)
    // A field merely named constructor is an ordinary field.
    expect((await h.app.inject({ method: 'PATCH', url: `/meta/${CID}`, headers: json, payload: '{"constructor":"x"}' })).statusCode).toBe(200)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('malformed and empty JSON stay 400 schema_violation', async () => {
    expect(await refused('PATCH', `/meta/${CID}`, '{bad')).toMatchObject({ error: 'schema_violation', message: 'body is not valid JSON' })
    expect((await refused('PATCH', `/meta/${CID}`, '')).error).toBe('schema_violation')
  })
})
