/**
 * Checks of the peer ids and multiaddrs an operator configures, here so that
 * libp2p's parsers stay inside this folder (the node's configuration calls these).
 */
import { peerIdFromString } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'

/**
 * Why `a` is not a usable TCP multiaddr, or undefined when it is (the mesh
 * speaks TCP only). A dial address (`dial`) may end in `/p2p/<peerId>` or
 * leave the peer to the handshake; a listen address names no peer.
 */
export function multiaddrProblem (a: string, dial: boolean): string | undefined {
  let names: string[]
  try {
    names = multiaddr(a).getComponents().map(c => c.name)
  } catch {
    return `${JSON.stringify(a)} is not a multiaddr (e.g. /ip4/10.0.0.2/tcp/4001${dial ? '/p2p/12D3KooW…' : ''})`
  }
  const tcp = names.indexOf('tcp')
  const rest = tcp < 0 ? [] : names.slice(tcp + 1)
  const hostFirst = tcp === 1 && ['ip4', 'ip6', 'dns', 'dns4', 'dns6'].includes(names[0])
  if (!hostFirst || rest.length > (dial ? 1 : 0) || (rest.length === 1 && rest[0] !== 'p2p')) {
    return `${JSON.stringify(a)} is not a TCP address (e.g. /ip4/10.0.0.2/tcp/4001${dial ? ', /dns4/peer2/tcp/4001 or …/tcp/4001/p2p/12D3KooW…' : ''})`
  }
  return undefined
}

/**
 * A relayed address (circuit relay v2) as members keep and exchange them:
 * a TCP address of the relay, `/p2p/<relay>`, then `/p2p-circuit`, with or
 * without the member's own `/p2p/<peerId>` at the end.
 */
const RELAYED = /^(\/(?:ip4|ip6|dns|dns4|dns6)\/[^/]+\/tcp\/\d+)\/p2p\/([^/]+)\/p2p-circuit(?:\/p2p\/[^/]+)?$/

/** The relay of a relayed address (its TCP address and peer id), or undefined for any other address. */
export function relayOf (addr: string): { addr: string, peerId: string } | undefined {
  const m = RELAYED.exec(addr)
  if (m === null || !isPeerId(m[2]) || multiaddrProblem(m[1], false) !== undefined) return undefined
  return { addr: `${m[1]}/p2p/${m[2]}`, peerId: m[2] }
}

/** Why `a` is not an address a member can be dialed at (a TCP address or a relayed one, no peer id of its own), or undefined. */
export function memberAddrProblem (a: string): string | undefined {
  if (a.includes('/p2p-circuit')) return relayOf(a) === undefined || /\/p2p-circuit\/p2p\//.test(a) ? `${JSON.stringify(a)} is not a relayed address (…/tcp/4001/p2p/<relay>/p2p-circuit)` : undefined
  return multiaddrProblem(a, false)
}

export function isPeerId (id: string): boolean {
  try {
    peerIdFromString(id)
    return true
  } catch {
    return false
  }
}
