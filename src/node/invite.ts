/**
 * The invite: one line that carries what a new node needs to join a mesh,
 * the swarm key and the addresses where the mesh can be reached
 * (`meta-core invite` prints it, `meta-core join <invite>` and `start
 * --invite` take it). It is a secret: whoever holds it holds the mesh's key.
 *
 *   meta-core-invite.1.<payload>.<check>
 *
 * `1` is the format's version. The payload is base64url of a JSON object:
 * `k` the swarm key's 64 hex digits, `a` the addresses (multiaddrs ending in
 * `/p2p/<peerId>`), `n` the inviting node's name (optional). The check is the
 * first 8 hex digits of SHA-256 over everything before it, so a character
 * changed, added or left out while the line was copied is caught, and the
 * error says which part is wrong. Whitespace is ignored (a line a mail
 * program wrapped still reads).
 */
import { createHash } from 'node:crypto'
import { MetaCoreError } from '../common/index.js'

export const INVITE_PREFIX = 'meta-core-invite'
export const INVITE_VERSION = 1
const CHECK_HEX = 8
/** At most this many addresses ride in an invite (the bootstrap list needs one that answers). */
export const MAX_INVITE_ADDRS = 16

export interface Invite {
  /** The swarm key's 32 bytes as 64 lowercase hex digits. */
  keyHex: string
  /** Where the mesh can be reached: multiaddrs ending in /p2p/<peerId>. */
  addrs: string[]
  /** The name of the node that made it, when it has one. */
  name?: string
}

/** An invite that cannot be used; the message says what is wrong with it (never what it holds). */
export class InviteError extends MetaCoreError {
  constructor (message: string) {
    super('invalid_invite', message)
  }
}

export function encodeInvite (invite: Invite): string {
  const body: { k: string, a: string[], n?: string } = { k: invite.keyHex.toLowerCase(), a: invite.addrs.slice(0, MAX_INVITE_ADDRS) }
  if (invite.name !== undefined) body.n = invite.name
  const head = `${INVITE_PREFIX}.${INVITE_VERSION}.${Buffer.from(JSON.stringify(body)).toString('base64url')}`
  return `${head}.${check(head)}`
}

/**
 * Reads an invite. `addrProblem` says why an address is not one a node can
 * bootstrap to (mesh/libp2p/addresses.ts; the node's checks). Throws
 * InviteError naming what is wrong.
 */
export function decodeInvite (text: string, addrProblem?: (a: string) => string | undefined): Invite {
  const s = text.replace(/\s+/g, '')
  if (s === '') throw new InviteError('the invite is empty')
  if (!s.startsWith(`${INVITE_PREFIX}.`)) {
    throw new InviteError(`this is not a meta-core invite: an invite begins with "${INVITE_PREFIX}." (meta-core invite prints one on a node of the mesh)`)
  }
  const parts = s.slice(INVITE_PREFIX.length + 1).split('.')
  const version = parts[0]
  if (!/^\d+$/.test(version)) throw new InviteError(`the invite's version "${version.slice(0, 8)}" is not a number: the line was changed after "${INVITE_PREFIX}."`)
  if (Number(version) !== INVITE_VERSION) {
    throw new InviteError(`the invite has version ${version}, and this meta-core reads version ${INVITE_VERSION}${Number(version) > INVITE_VERSION ? ': it was made by a newer meta-core, update this one' : ''}`)
  }
  if (parts.length < 3 || parts[1] === '') throw new InviteError('the invite is cut short: it ends before its checksum (copy the whole line, up to its last character)')
  if (parts.length > 3) throw new InviteError('the invite has more parts than an invite has: two invites pasted together, or text added to it')
  const [, payload, sum] = parts
  const bad = /[^A-Za-z0-9_-]/.exec(payload)
  // Counted from 1, in the invite without its whitespace.
  if (bad !== null) throw new InviteError(`the invite holds a character an invite never has ("${bad[0]}" at character ${INVITE_PREFIX.length + version.length + 3 + bad.index}): it was changed while copied`)
  if (!/^[0-9a-f]*$/.test(sum)) throw new InviteError('the invite\'s checksum (its last part) is not hex digits: it was changed while copied')
  if (sum.length < CHECK_HEX) throw new InviteError(`the invite is cut short: its checksum has ${sum.length} of its ${CHECK_HEX} digits (copy the whole line, up to its last character)`)
  if (sum.length > CHECK_HEX) throw new InviteError(`the invite's checksum has ${sum.length} digits, not ${CHECK_HEX}: text was added at its end`)
  if (check(`${INVITE_PREFIX}.${version}.${payload}`) !== sum) {
    throw new InviteError('the invite is damaged: its checksum does not match its content (a character was changed, added or left out while it was copied; copy the whole line again)')
  }
  let body: unknown
  try {
    body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
  } catch {
    throw new InviteError('the invite\'s content does not read, although its checksum matches: it was not made by meta-core invite')
  }
  const o = (typeof body === 'object' && body !== null ? body : {}) as { k?: unknown, a?: unknown, n?: unknown }
  if (typeof o.k !== 'string' || !/^[0-9a-f]{64}$/.test(o.k)) throw new InviteError('the invite holds no swarm key (64 hex digits): it was not made by meta-core invite')
  if (!Array.isArray(o.a) || o.a.length === 0 || !o.a.every(a => typeof a === 'string')) {
    throw new InviteError('the invite holds no address to reach the mesh at: make it on a node that is running, or one with META_CORE_ANNOUNCE or a LAN address')
  }
  const addrs = o.a.slice(0, MAX_INVITE_ADDRS)
  for (const a of addrs) {
    const why = addrProblem?.(a) ?? (/\/p2p\/[^/]+$/.test(a) ? undefined : `${JSON.stringify(a)} names no peer id`)
    if (why !== undefined) throw new InviteError(`the invite holds an address a node cannot dial: ${why}`)
  }
  return { keyHex: o.k, addrs, ...(typeof o.n === 'string' && o.n !== '' ? { name: o.n.slice(0, 64) } : {}) }
}

/** The swarm key file's text for an invite's key. */
export function swarmKeyText (keyHex: string): string {
  return `/key/swarm/psk/1.0.0/\n/base16/\n${keyHex}\n`
}

function check (head: string): string {
  return createHash('sha256').update(head).digest('hex').slice(0, CHECK_HEX)
}
