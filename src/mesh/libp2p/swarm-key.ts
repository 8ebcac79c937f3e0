/**
 * Swarm keys (libp2p pnet): `/key/swarm/psk/1.0.0/`, `/base16/`, then 64
 * hex digits. Every node of a mesh holds the same key; a node with another
 * key cannot even finish a connection handshake.
 */
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { MeshKeyError } from './errors.js'

const SWARM_KEY_RE = /^\/key\/swarm\/psk\/1\.0\.0\/\r?\n\/base16\/\r?\n([0-9a-fA-F]{64})\s*$/

export interface SwarmKey {
  /** The file's bytes, as `@libp2p/pnet` takes them. */
  psk: Uint8Array
  /** The 32 secret bytes (the file's hex digits): the XSalsa20 key of the private network. */
  secret: Uint8Array
  /** A short id of the key, safe to show: names the mesh's gossip topic. */
  meshId: string
}

/** Parses a swarm key file's text; undefined when it is not one. */
export function parseSwarmKey (text: string): SwarmKey | undefined {
  const m = SWARM_KEY_RE.exec(text)
  if (m === null) return undefined
  const hex = m[1].toLowerCase()
  return {
    psk: new TextEncoder().encode(`/key/swarm/psk/1.0.0/\n/base16/\n${hex}`),
    secret: Uint8Array.from(Buffer.from(hex, 'hex')),
    meshId: createHash('sha256').update('meta-core mesh ' + hex).digest('hex').slice(0, 16)
  }
}

export function readSwarmKey (file: string): SwarmKey {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    throw new MeshKeyError(`cannot read the swarm key ${file}: ${(err as Error).message}`, { cause: err })
  }
  const key = parseSwarmKey(text)
  if (key === undefined) throw new MeshKeyError(`${file} is not a swarm key (/key/swarm/psk/1.0.0/, /base16/, 64 hex digits; meta-core keygen <path> writes one)`)
  return key
}

/** The text of a new swarm key file (32 random bytes). */
export function newSwarmKeyText (): string {
  return `/key/swarm/psk/1.0.0/\n/base16/\n${randomBytes(32).toString('hex')}\n`
}

/** Writes a new swarm key to `file` (mode 0600); refuses to overwrite an existing file. */
export function writeNewSwarmKey (file: string): void {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  const text = newSwarmKeyText()
  try {
    fs.writeFileSync(file, text, { mode: 0o600, flag: 'wx' })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new MeshKeyError(`${file} already exists: a swarm key is never overwritten (move it away first)`)
    throw new MeshKeyError(`cannot write ${file}: ${(err as Error).message}`, { cause: err })
  }
}
