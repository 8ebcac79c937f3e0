/**
 * Checks of the peer ids and multiaddrs an operator configures, here so that
 * libp2p's parsers stay inside this folder (the node's configuration calls these).
 */
import { peerIdFromString } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'

/** Why `a` is not a usable multiaddr (with `needsPeer`, one ending in /p2p/<peerId>), or undefined when it is. */
export function multiaddrProblem (a: string, needsPeer: boolean): string | undefined {
  try {
    const last = multiaddr(a).getComponents().pop()
    if (needsPeer && last?.name !== 'p2p') return `${JSON.stringify(a)} does not end in /p2p/<peerId>`
    return undefined
  } catch {
    return `${JSON.stringify(a)} is not a multiaddr (e.g. /ip4/10.0.0.2/tcp/4001${needsPeer ? '/p2p/12D3KooW…' : ''})`
  }
}

export function isPeerId (id: string): boolean {
  try {
    peerIdFromString(id)
    return true
  } catch {
    return false
  }
}
