/**
 * The member exchange: a connected peer asks, and the node answers with the
 * peers it is connected to and their listen addresses (what identify told
 * it). One stream per request, one length-prefixed JSON reply, like the
 * pull protocol. This is how a node that knows only its bootstrap peer
 * learns the rest of the mesh, so that losing the bootstrap peer does not
 * leave it alone.
 *
 * Only members can ask or answer (the connection is behind the swarm key
 * and noise), and the members are trusted not to lie about each other
 * (docs/mesh.md, Trust); still, a reply is bounded (MAX_REPLY_BYTES,
 * MAX_LISTED members) and every id and address in it is checked before it
 * reaches the book.
 */
import { lpStream } from '@libp2p/utils'
import type { Connection, Libp2p, PeerId, Stream } from '@libp2p/interface'
import type { Logger } from '../../common/index.js'
import { isPeerId } from './addresses.js'

const MEMBERS_PROTOCOL = '/meta-core/members/1.0.0'
const MAX_REPLY_BYTES = 64 * 1024
const MAX_LISTED = 64
const MAX_ADDRS = 8
const REQUEST_TIMEOUT_MS = 5_000

export interface ListedMember { id: string, addrs: string[] }

/** Serves the exchange: `list` gives the members to tell `peer` about (itself excluded here). */
export async function handleMemberRequests (node: Libp2p, list: () => ListedMember[], log: Logger): Promise<void> {
  await node.handle(MEMBERS_PROTOCOL, async (stream: Stream, connection: Connection) => {
    const signal = AbortSignal.timeout(REQUEST_TIMEOUT_MS)
    try {
      const asker = connection.remotePeer.toString()
      const members = list().filter(m => m.id !== asker).slice(0, MAX_LISTED).map(m => ({ id: m.id, addrs: m.addrs.slice(0, MAX_ADDRS) }))
      const lp = lpStream(stream, { maxDataLength: MAX_REPLY_BYTES })
      await lp.write(new TextEncoder().encode(JSON.stringify({ members })), { signal })
      await stream.close({ signal })
    } catch (err) {
      log.debug('member exchange stream failed', { peer: connection.remotePeer.toString(), err })
      stream.abort(err instanceof Error ? err : new Error(String(err)))
    }
  }, { maxInboundStreams: 2, maxOutboundStreams: 2 })
}

/** Asks `peer` for the members it is connected to; what does not parse is left out. */
export async function requestMembers (node: Libp2p, peer: PeerId): Promise<ListedMember[]> {
  const signal = AbortSignal.timeout(REQUEST_TIMEOUT_MS)
  const stream = await node.dialProtocol(peer, MEMBERS_PROTOCOL, { signal })
  let bytes: Uint8Array
  try {
    const lp = lpStream(stream, { maxDataLength: MAX_REPLY_BYTES })
    bytes = (await lp.read({ signal })).subarray()
    await stream.close({ signal })
  } catch (err) {
    stream.abort(err instanceof Error ? err : new Error(String(err)))
    throw err
  }
  return parseMembers(bytes)
}

function parseMembers (bytes: Uint8Array): ListedMember[] {
  let o: unknown
  try {
    o = JSON.parse(new TextDecoder().decode(bytes))
  } catch {
    return []
  }
  const list = (o as { members?: unknown } | null)?.members
  if (!Array.isArray(list)) return []
  const out: ListedMember[] = []
  for (const m of list.slice(0, MAX_LISTED)) {
    const id = (m as { id?: unknown })?.id
    const addrs = (m as { addrs?: unknown })?.addrs
    if (typeof id !== 'string' || !Array.isArray(addrs) || !isPeerId(id)) continue
    out.push({ id, addrs: addrs.filter((a): a is string => typeof a === 'string' && a.length < 300).slice(0, MAX_ADDRS) })
  }
  return out
}
