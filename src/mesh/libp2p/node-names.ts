/**
 * Node names between peers: each node's name (META_CORE_NODE_NAME, the host
 * name by default) rides in the agent version identify already sends on
 * every connection (`meta-core node=<name, URI-encoded>`), so no protocol
 * of ours is added and a peer of an older version simply has no name. The
 * names heard are kept for the node's life, also after a peer disconnects.
 * A name is a label for people, never an identity: two nodes may give the
 * same one, and the peer id stays what everything is keyed by.
 */
import type { Libp2p } from 'libp2p'

/** Names longer than this (in characters) are cut: a peer's label must not crowd a table. */
const MAX_NODE_NAME = 64

/** The agent version this node announces. */
export function agentVersionOf (name: string | undefined): string {
  return name === undefined || name === '' ? 'meta-core' : `meta-core node=${encodeURIComponent(name.slice(0, MAX_NODE_NAME))}`
}

/** The node name in a peer's agent version, or undefined (another program, an older meta-core, a malformed name). */
export function nodeNameOf (agentVersion: string | undefined): string | undefined {
  const m = /^meta-core(?:\/\S*)? (?:.* )?node=(\S+)/.exec(agentVersion ?? '')
  if (m === null) return undefined
  try {
    // Control characters could rewrite a terminal's line in `meta-core status`: not a name.
    const name = decodeURIComponent(m[1]).slice(0, MAX_NODE_NAME)
    return /^[^\p{Cc}]+$/u.test(name) ? name : undefined
  } catch {
    return undefined
  }
}

/** The names peers announced, by peer id, from libp2p's identify results. */
export class PeerNames {
  private readonly names = new Map<string, string>()

  attach (node: Libp2p): void {
    node.addEventListener('peer:identify', (evt) => {
      const name = nodeNameOf(evt.detail.agentVersion)
      if (name !== undefined) this.names.set(evt.detail.peerId.toString(), name)
    })
  }

  get (peerId: string): string | null {
    return this.names.get(peerId) ?? null
  }
}
