/**
 * `/api/mesh` and `/api/mesh/digest`: this node's place in the mesh (its
 * peer id and listening addresses, each peer's sync position and what it
 * sent that was refused) and a digest of the replicated range, equal on two
 * nodes exactly when they hold the same records, versions and tombstones.
 * `/api/mesh/transfers`: file bytes moved to and from each peer.
 * All need the token when one is set (peer ids and addresses are internal).
 */
import type { ApiContext, ApiScope } from '../context.js'
import { ComponentUnavailableError } from '../errors.js'
import { withErrors } from '../wire/kit.js'
import { MeshDigest, MeshDigests, MeshStatus, MeshTransfers, type PeerDigest } from '../wire/mesh.js'

export function meshRoutes (app: ApiScope, ctx: ApiContext): void {
  const mesh = (): NonNullable<ApiContext['mesh']> => {
    if (ctx.mesh === undefined) throw new ComponentUnavailableError('mesh')
    return ctx.mesh
  }

  app.get('/api/mesh', {
    schema: {
      summary: 'This node in the mesh: its peer id and addresses, and each peer\'s sync state and refusals',
      tags: ['mesh'],
      response: withErrors({ 200: MeshStatus }, 503)
    }
  }, async () => {
    const view = mesh().status()
    const building = ctx.search?.building?.()
    return { ...view, join: { ...view.join, searchBuilding: building !== undefined, searchIndexed: building?.done ?? null,
      searchToIndex: building?.total ?? null } }
  })

  app.get('/api/mesh/transfers', {
    schema: {
      summary: 'File bytes moved to and from each peer (the byte protocol): totals, and transfers running now',
      tags: ['mesh'],
      response: withErrors({ 200: MeshTransfers }, 503)
    }
  }, async () => ({ peers: mesh().bytes?.figures() ?? [] }))

  app.get('/api/mesh/digest', {
    schema: {
      summary: 'Digest of the replicated range (keys, values or tombstones, versions): equal on two nodes exactly when their replicas are',
      tags: ['mesh'],
      response: withErrors({ 200: MeshDigest }, 503)
    }
  }, async () => mesh().digest())

  app.get('/api/mesh/digests', {
    schema: {
      summary: 'This node\'s digest beside each connected peer\'s, asked over the mesh: which peers hold the same replica',
      tags: ['mesh'],
      response: withErrors({ 200: MeshDigests }, 503)
    }
  }, async () => {
    const m = mesh()
    const answers = await (m.peerDigests?.() ?? Promise.resolve(new Map<string, { digest: string, keys: number } | { error: string }>()))
    // Taken after the peers answered, so a write that reached every node meanwhile does not show as a difference.
    const own = m.digest()
    const view = m.status()
    const names = new Map(view.peers.map(p => [p.peerId, p.name]))
    return {
      self: { peerId: view.self.peerId, name: view.self.name, digest: own.digest, keys: own.keys },
      peers: [...answers].sort(([a], [b]) => a.localeCompare(b)).map(([peerId, r]): PeerDigest => 'error' in r
        ? { peerId, name: names.get(peerId) ?? null, digest: null, keys: null, agrees: null, error: r.error }
        : { peerId, name: names.get(peerId) ?? null, digest: r.digest, keys: r.keys, agrees: r.digest === own.digest })
    }
  })
}
