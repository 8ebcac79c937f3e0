/**
 * `meta-core invite`: prints one line a new node joins the mesh with
 * (`meta-core join <invite>`; the format is in invite.ts): this node's
 * swarm key and the addresses where the mesh can be reached from elsewhere:
 * the addresses announced for it, the relays it is reachable through (their
 * own addresses: a new node in another home connects to the relay, makes
 * its own reservation there and learns the members from it), and its LAN
 * addresses (for a new node in the same home). The addresses come from the
 * running node (`/api/mesh`, as `status` asks it); a node that is not
 * running gives its configured ones only, and the command says so.
 *
 * The invite is printed alone on stdout (for `$(meta-core invite)`); the
 * warning that it is a secret, and what it holds, go to stderr. It is never
 * logged.
 */
import fs from 'node:fs'
import os from 'node:os'
import type { MeshView } from '../mesh/index.js'
import { parseSwarmKey } from '../mesh/libp2p/swarm-key.js'
import { ConfigError, parseNodeOptions, type NodeConfig } from './config.js'
import { encodeInvite, MAX_INVITE_ADDRS } from './invite.js'
import { optionLines, type OptionSpec } from './options.js'
import type { Output } from './run-node.js'
import { defaultNodeUrl, fetchStatus, STATUS_OPTIONS, StatusError } from './status-command.js'

const INVITE_OPTIONS = STATUS_OPTIONS.filter(o => o.key === 'url' || o.key === 'timeoutMs') as ReadonlyArray<OptionSpec<'url' | 'timeoutMs'>>

export const SECRET_WARNING = 'This invite holds the mesh\'s swarm key: whoever has it can join the mesh and read and change every record. ' +
  'Give it only to people you trust, over a private channel (not a public chat, a forum or an issue tracker).'

export function inviteUsage (): string {
  return [
    'Usage: meta-core invite [node options]',
    '',
    'Prints one line another node joins this mesh with: meta-core join <invite>. It holds the swarm key',
    'and the addresses where the mesh can be reached (announced, relays, LAN), versioned and with a checksum.',
    'It is a secret: whoever has it can join the mesh. The addresses are asked of the running node',
    '(as meta-core status asks it); takes the same options and variables as start.',
    '',
    ...optionLines(INVITE_OPTIONS),
    '  (and every option of meta-core start --help)'
  ].join('\n')
}

export async function printInvite (args: readonly string[], env: Readonly<Record<string, string | undefined>>, io: Output): Promise<number> {
  const r = await parseNodeOptions(INVITE_OPTIONS, args, env, process.cwd())
  if (r.help) { io.out(inviteUsage() + '\n'); return 0 }
  if (r.problems.length > 0) throw new ConfigError(r.problems.join('\n'))
  const c = r.config
  if (c.swarmKeyPath === undefined) {
    io.err('meta-core invite: this node is in no mesh: it has no swarm key (META_CORE_SWARM_KEY, or one an invite left beside its store). meta-core keygen makes one for a new mesh\n')
    return 1
  }
  const key = parseSwarmKey(fs.readFileSync(c.swarmKeyPath, 'utf8'))
  if (key === undefined) throw new ConfigError(`${c.swarmKeyPath} is not a swarm key`)
  const keyHex = Buffer.from(key.secret).toString('hex')
  const url = (r.extra.url as string | undefined) ?? defaultNodeUrl(c.httpHost, c.httpPort === 0 ? 9000 : c.httpPort)
  let mesh: MeshView | undefined
  try {
    mesh = (await fetchStatus(url, c.apiToken, r.extra.timeoutMs as number)).mesh
  } catch (err) {
    if (!(err instanceof StatusError)) throw err
    io.err(`meta-core invite: the node does not answer (${err.message}): the invite holds its configured addresses only, no relayed one\n`)
  }
  if (mesh !== undefined && mesh.meshId !== key.meshId) {
    io.err(`meta-core invite: the node at ${url} is ${mesh.enabled ? `in mesh ${mesh.meshId ?? '?'}` : 'standalone'}, not in mesh ${key.meshId} of ${c.swarmKeyPath}: give the options the node runs with\n`)
    return 1
  }
  const { relayOf } = await import('../mesh/libp2p/addresses.js')
  const addrs = mesh !== undefined ? running(mesh, relayOf) : await configured(c)
  if (addrs === undefined) {
    io.err(`meta-core invite: no identity key at ${c.keyPath} yet: start the node once (or meta-core id --create) so that the invite can name it\n`)
    return 1
  }
  if (addrs.length === 0) {
    io.err('meta-core invite: this node has no address another node could dial: give it a p2p listen address (META_CORE_P2P_LISTEN) or META_CORE_ANNOUNCE\n')
    return 1
  }
  io.out(encodeInvite({ keyHex, addrs, name: mesh?.self.name ?? c.nodeName }) + '\n')
  io.err([`mesh ${key.meshId}: the invite above reaches it at`, ...addrs.map(a => `  ${a}`), '', SECRET_WARNING, 'Join with: meta-core join <invite> [start options]'].join('\n') + '\n')
  return 0
}

type RelayOf = (a: string) => { addr: string, peerId: string } | undefined

/** What the running node says: announced addresses first, then its relays', then its own direct ones (loopback last, only if alone). */
function running (mesh: MeshView, relayOf: RelayOf): string[] {
  const self = mesh.self.peerId
  const withId = (a: string): string => /\/p2p\/[^/]+$/.test(a) ? a : `${a}/p2p/${self}`
  const announced = (mesh.reach?.announced ?? []).map(withId)
  const relays = (mesh.reach?.relayed ?? []).map(a => relayOf(a)?.addr).filter((a): a is string => a !== undefined)
  const direct = mesh.self.addrs.filter(a => !a.includes('/p2p-circuit')).map(withId)
  return pick([...announced, ...relays, ...direct])
}

/** From the configuration alone: announced addresses and the listen addresses (a wildcard as the machine's interface addresses). */
async function configured (c: NodeConfig): Promise<string[] | undefined> {
  if (!fs.existsSync(c.keyPath)) return undefined
  const { prepareIdentity } = await import('../mesh/libp2p/identity.js')
  const self = (await prepareIdentity(c.keyPath)).identity.peerId
  const out = [...c.announce]
  for (const a of c.p2pListen) {
    const m = /^\/ip([46])\/([^/]+)\/tcp\/(\d+)$/.exec(a)
    if (m === null || m[3] === '0') continue
    if (m[2] !== '0.0.0.0' && m[2] !== '::') { out.push(a); continue }
    for (const list of Object.values(os.networkInterfaces())) {
      for (const i of list ?? []) if (i.family === `IPv${m[1]}` && !i.internal && !i.address.startsWith('fe80')) out.push(`/ip${m[1]}/${i.address}/tcp/${m[3]}`)
    }
  }
  return pick(out.map(a => /\/p2p\/[^/]+$/.test(a) ? a : `${a}/p2p/${self}`))
}

/** Each address once, in order, loopback ones only when there is nothing else, at most MAX_INVITE_ADDRS. */
function pick (addrs: string[]): string[] {
  const unique = [...new Set(addrs)]
  const loopback = (a: string): boolean => /^\/ip4\/127\.|^\/ip6\/::1\/|^\/dns[46]?\/localhost\//.test(a)
  const outside = unique.filter(a => !loopback(a))
  return (outside.length > 0 ? outside : unique).slice(0, MAX_INVITE_ADDRS)
}
