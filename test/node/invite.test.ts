/**
 * The invite's format (src/node/invite.ts): what `meta-core invite` writes
 * reads back the same, whitespace a mail program adds included; anything
 * mistyped, cut short, pasted twice, of another version or not an invite at
 * all is refused with a message naming what is wrong, and no message ever
 * shows the key it holds.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { multiaddrProblem } from '../../src/mesh/libp2p/addresses.js'
import { decodeInvite, encodeInvite, InviteError, type Invite } from '../../src/node/invite.js'

const KEY = 'ab'.repeat(32)
const PEER = '12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN'
const INVITE: Invite = { keyHex: KEY, addrs: [`/ip4/203.0.113.5/tcp/4001/p2p/${PEER}`, `/dns4/home.example.org/tcp/4001/p2p/${PEER}`], name: 'attic' }
const check = (a: string): string | undefined => multiaddrProblem(a, true)

/** The message decodeInvite refuses `text` with (it must refuse it, with an InviteError). */
function refusal (text: string): string {
  try {
    decodeInvite(text, check)
  } catch (err) {
    expect(err).toBeInstanceOf(InviteError)
    const message = (err as Error).message
    expect(message).not.toContain(KEY)
    return message
  }
  throw new Error('expected the invite to be refused')
}

/** An invite around any payload, with a checksum that matches it (what a tampered tool could make). */
function forged (body: unknown): string {
  const head = `meta-core-invite.1.${Buffer.from(JSON.stringify(body)).toString('base64url')}`
  return `${head}.${createHash('sha256').update(head).digest('hex').slice(0, 8)}`
}

describe('invites', () => {
  it('read back what was written, on one line, and through the line breaks and spaces a mail program adds', () => {
    const text = encodeInvite(INVITE)
    expect(text).toMatch(/^meta-core-invite\.1\.[A-Za-z0-9_-]+\.[0-9a-f]{8}$/)
    expect(decodeInvite(text, check)).toEqual(INVITE)
    const wrapped = text.match(/.{1,40}/g)!.join('\n  ') + '\n'
    expect(decodeInvite(`  ${wrapped}`, check)).toEqual(INVITE)
    expect(decodeInvite(encodeInvite({ keyHex: KEY, addrs: INVITE.addrs }), check)).toEqual({ keyHex: KEY, addrs: INVITE.addrs })
  })

  it('refuse a mistyped, cut, padded or foreign invite, saying what is wrong', () => {
    const text = encodeInvite(INVITE)
    const at = text.lastIndexOf('.') - 10
    const typo = text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1)
    expect(refusal(typo)).toContain('its checksum does not match')
    expect(refusal(text.slice(0, text.lastIndexOf('.')))).toContain('cut short: it ends before its checksum')
    expect(refusal(text.slice(0, -3))).toContain('cut short: its checksum has 5 of its 8 digits')
    expect(refusal(text.slice(0, 60))).toContain('cut short')
    expect(refusal(text + 'ff')).toContain('text was added at its end')
    expect(refusal(text + text)).toContain('more parts than an invite has')
    expect(refusal(text.replace('.1.', '.2.'))).toContain('version 2, and this meta-core reads version 1: it was made by a newer meta-core')
    expect(refusal(text.replace('.1.', '.x.'))).toContain('version "x" is not a number')
    expect(refusal(text.slice(0, 30) + '$' + text.slice(31))).toContain('a character an invite never has ("$" at character 31)')
    expect(refusal('')).toBe('the invite is empty')
    expect(refusal('/key/swarm/psk/1.0.0/')).toContain('not a meta-core invite')
    expect(refusal(text.slice(0, text.lastIndexOf('.')) + '.zzzzzzzz')).toContain('checksum (its last part) is not hex digits')
  })

  it('refuse invites no meta-core makes even when their checksum matches: no key, no address, an address no node dials', () => {
    expect(refusal(forged({ a: INVITE.addrs }))).toContain('holds no swarm key')
    expect(refusal(forged({ k: KEY, a: [] }))).toContain('holds no address')
    expect(refusal(forged({ k: KEY, a: ['/ip4/203.0.113.5/udp/4001'] }))).toContain('an address a node cannot dial')
    expect(refusal(forged({ k: KEY, a: ['/ip4/203.0.113.5/tcp/4001'] }))).toBeDefined()
    expect(() => decodeInvite(forged({ k: KEY, a: ['/ip4/203.0.113.5/tcp/4001'] }))).toThrow('names no peer id')
    expect(refusal(`${forged('nonsense').slice(0, -9)}.${createHash('sha256').update(forged('nonsense').slice(0, -9)).digest('hex').slice(0, 8)}`)).toContain('holds no swarm key')
  })
})
