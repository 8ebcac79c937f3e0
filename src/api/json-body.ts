/**
 * The JSON body parser of every route (it replaces fastify's own).
 *
 * Bad input never writes, so a body is refused whole, with a 400 that says
 * why, when its text is not what a store of strings can hold faithfully:
 * - bytes that are not UTF-8 (fastify's parser decoded them as U+FFFD and
 *   stored that: a silent change of the client's data);
 * - a lone UTF-16 surrogate (`"\ud800"`): SQLite stores it as bytes that are
 *   not UTF-8 and reads them back as three U+FFFD, so a field named with one
 *   could never be addressed again (a replacing PUT did not remove it, a
 *   DELETE left the row behind);
 * - a `__proto__` key, or `constructor` holding `prototype`, anywhere: those
 *   are how prototype pollution arrives; the answer names the key instead
 *   of calling the body "not valid JSON".
 * The checks that walk the parsed value run only when the text could hold
 * such a thing (a `\u` escape, or the key spelled out), so an ordinary body
 * costs one strict decode and one JSON.parse.
 */
import type { FastifyRequest } from 'fastify'
import { InvalidInputError } from '../common/index.js'
import { ApiError } from './errors.js'

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** A lone surrogate: with the `u` flag a well-formed pair is one code point and does not match. */
const LONE_SURROGATE = /\p{Cs}/u

/** Text that may hide a surrogate escape or an escaped forbidden key. */
const ESCAPE = /\\u/

function refuseString (s: string, where: string): void {
  if (LONE_SURROGATE.test(s)) {
    throw new InvalidInputError(`body holds a lone UTF-16 surrogate in ${where}: text must be well-formed Unicode`, { code: 'invalid_value' })
  }
}

/** Walks the parsed body (iteratively: nesting depth costs no stack) for forbidden keys and, when asked, lone surrogates. */
function inspect (root: unknown, surrogates: boolean): void {
  const stack: unknown[] = [root]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v === 'string') {
      if (surrogates) refuseString(v, 'a value')
      continue
    }
    if (v === null || typeof v !== 'object') continue
    if (Array.isArray(v)) {
      for (const x of v) stack.push(x)
      continue
    }
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (k === '__proto__') throw new ApiError(400, 'schema_violation', 'the key "__proto__" is not allowed in a JSON body')
      if (k === 'constructor' && x !== null && typeof x === 'object' && Object.prototype.hasOwnProperty.call(x, 'prototype')) {
        throw new ApiError(400, 'schema_violation', 'a "constructor" key holding "prototype" is not allowed in a JSON body')
      }
      if (surrogates) refuseString(k, 'a key')
      stack.push(x)
    }
  }
}

/** Decodes and parses a JSON body; throws the 400 the client should get. */
function parseJsonBody (body: Buffer): unknown {
  if (body.length === 0) throw new ApiError(400, 'schema_violation', 'body is empty: send a JSON value')
  let text: string
  try {
    text = utf8.decode(body)
  } catch {
    throw new InvalidInputError('body is not valid UTF-8', { code: 'invalid_value' })
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new ApiError(400, 'schema_violation', 'body is not valid JSON')
  }
  const escapes = ESCAPE.test(text)
  if (escapes || text.includes('__proto__') || text.includes('constructor')) inspect(value, escapes)
  return value
}

/** fastify content-type parser form of `parseJsonBody` (parseAs: 'buffer'). */
export function jsonBodyParser (_req: FastifyRequest, body: Buffer | string, done: (err: Error | null, value?: unknown) => void): void {
  try {
    done(null, parseJsonBody(typeof body === 'string' ? Buffer.from(body) : body))
  } catch (err) {
    done(err as Error, undefined)
  }
}
