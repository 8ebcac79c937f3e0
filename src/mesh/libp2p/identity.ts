/**
 * The node's libp2p identity: an Ed25519 key kept in a file (protobuf, mode
 * 0600), created on first start. Its peer id is the node's origin in every
 * version it writes, so it must survive restarts: losing the file makes the
 * node a new peer (its old versions stay valid; its holder members move to
 * the new id at the next start).
 *
 * Reading and creating are split so a node can learn its peer id before it
 * opens its store (the store writes with it) and write a new key file only
 * once the store is known to be its own.
 */
import fs from 'node:fs'
import path from 'node:path'
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { PrivateKey } from '@libp2p/interface'
import type { Logger } from '../../common/index.js'
import { MeshKeyError } from './errors.js'

export interface NodeIdentity {
  privateKey: PrivateKey
  /** The peer id string (`12D3KooW…`). */
  peerId: string
}

interface PreparedIdentity {
  identity: NodeIdentity
  /** Writes the key file if the identity is new (mode 0600, never over an existing file); a no-op otherwise. */
  persist: () => void
}

/** The identity in `file`, or a new one (not yet written: call `persist`) when the file does not exist. */
export async function prepareIdentity (file: string, log?: Logger): Promise<PreparedIdentity> {
  let bytes: Buffer | undefined
  try {
    bytes = fs.readFileSync(file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new MeshKeyError(`cannot read the identity key ${file}: ${(err as Error).message}`, { cause: err })
  }
  if (bytes !== undefined) {
    let privateKey: PrivateKey
    try {
      privateKey = privateKeyFromProtobuf(bytes)
    } catch (err) {
      throw new MeshKeyError(`${file} is not a libp2p private key (move it away to create a new identity)`, { cause: err })
    }
    if ((fs.statSync(file).mode & 0o077) !== 0) log?.warn('identity key is readable by other users: chmod 600 it', { file })
    return { identity: { privateKey, peerId: peerIdFromPrivateKey(privateKey).toString() }, persist: () => {} }
  }
  const privateKey = await generateKeyPair('Ed25519')
  const identity = { privateKey, peerId: peerIdFromPrivateKey(privateKey).toString() }
  return {
    identity,
    persist: () => {
      fs.mkdirSync(path.dirname(file), { recursive: true })
      try {
        // 'wx': never overwrite a key file, even one that appeared meanwhile.
        fs.writeFileSync(file, privateKeyToProtobuf(privateKey), { mode: 0o600, flag: 'wx' })
      } catch (err) {
        throw new MeshKeyError(`cannot write the identity key ${file}: ${(err as Error).message}`, { cause: err })
      }
      log?.info('created a new identity key', { file, peerId: identity.peerId })
    }
  }
}
