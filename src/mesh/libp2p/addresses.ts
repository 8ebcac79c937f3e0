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

export function isPeerId (id: string): boolean {
  try {
    peerIdFromString(id)
    return true
  } catch {
    return false
  }
}
