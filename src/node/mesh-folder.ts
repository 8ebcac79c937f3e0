/**
 * A node's mesh files in its own folder, beside its store: the swarm key
 * (`<db name>.swarm.key`) and the bootstrap list (`<db name>.bootstrap`, one
 * multiaddr a line) that an invite leaves there (`meta-core join`, `start
 * --invite`). A node started later with no swarm key configured uses them,
 * so a node that joined from an invite stays in its mesh across restarts
 * with no option given. An explicit META_CORE_SWARM_KEY wins over the folder's
 * key; the folder's bootstrap list is added to META_CORE_BOOTSTRAP.
 */
import fs from 'node:fs'
import path from 'node:path'
import { parseSwarmKey } from '../mesh/libp2p/swarm-key.js'
import { swarmKeyText, type Invite } from './invite.js'

/** The swarm key and bootstrap list files of the node whose store is `dbPath`. */
export function meshFiles (dbPath: string): { swarmKey: string, bootstrap: string } {
  const base = path.join(path.dirname(dbPath), path.basename(dbPath, path.extname(dbPath)))
  return { swarmKey: `${base}.swarm.key`, bootstrap: `${base}.bootstrap` }
}

/** The addresses of a bootstrap list file (empty when there is none; `#` comments and blank lines skipped). */
export function readBootstrapFile (file: string): string[] {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  return text.split('\n').map(l => l.trim()).filter(l => l !== '' && !l.startsWith('#'))
}

export interface InviteApplied {
  swarmKeyPath: string
  bootstrap: string[]
  /** The key file was written now (false: it held this mesh's key already). */
  wroteKey: boolean
  /** Addresses added to the bootstrap list file now. */
  added: number
  bootstrapFile: string
}

/**
 * Writes an invite's key and addresses into the node's folder: the key to
 * `keyFile` (the configured META_CORE_SWARM_KEY, or the folder's) unless it
 * holds the same key already, and the addresses to the folder's bootstrap
 * list. A key file holding another mesh's key is never overwritten: the
 * message says how to leave that mesh first. Returns what the node starts with.
 */
export function applyInvite (invite: Invite, dbPath: string, configuredKey: string | undefined, bootstrap: readonly string[]): InviteApplied {
  const files = meshFiles(dbPath)
  const keyFile = configuredKey ?? files.swarmKey
  let wroteKey = false
  let existing: string | undefined
  try {
    existing = fs.readFileSync(keyFile, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new InviteApplyError(`cannot read ${keyFile}: ${(err as Error).message}`)
  }
  if (existing !== undefined) {
    const key = parseSwarmKey(existing)
    if (key === undefined) throw new InviteApplyError(`${keyFile} exists and is not a swarm key: move it away, then join again`)
    const invited = parseSwarmKey(swarmKeyText(invite.keyHex))
    if (Buffer.compare(Buffer.from(key.secret), Buffer.from(invited?.secret ?? [])) !== 0) {
      throw new InviteApplyError(`this node is in another mesh already (${key.meshId}, swarm key ${keyFile}); the invite is for mesh ${invited?.meshId ?? '?'}. A node is in one mesh: move that key file away to leave its mesh, then join again`)
    }
  } else {
    fs.mkdirSync(path.dirname(keyFile), { recursive: true })
    fs.writeFileSync(keyFile, swarmKeyText(invite.keyHex), { mode: 0o600, flag: 'wx' })
    wroteKey = true
  }
  const kept = readBootstrapFile(files.bootstrap)
  const fresh = invite.addrs.filter(a => !kept.includes(a))
  if (fresh.length > 0) {
    fs.mkdirSync(path.dirname(files.bootstrap), { recursive: true })
    const head = kept.length === 0 ? '# meta-core: bootstrap addresses from an invite, one a line (added to META_CORE_BOOTSTRAP)\n' : ''
    fs.appendFileSync(files.bootstrap, head + fresh.join('\n') + '\n', { mode: 0o600 })
  }
  return { swarmKeyPath: keyFile, bootstrap: [...new Set([...bootstrap, ...kept, ...fresh])], wroteKey, added: fresh.length, bootstrapFile: files.bootstrap }
}

/** An invite that cannot be applied to this node (another mesh's key in the way, a file that cannot be written). */
export class InviteApplyError extends Error {}
