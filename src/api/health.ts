/**
 * What `/health` says: `ok`, or `degraded` with every reason that holds
 * now. The body keeps the original's fields (`status`, `redis`,
 * `timestamp`) so its clients read it as before; `reasons` says why.
 *
 * Degraded when:
 * - `storage`: the store is closed or a read fails;
 * - `clock`: this node's clock is out of the mesh's bound (its writes are refused);
 * - `no_peer`: the node has a swarm key and has reached no peer for longer
 *   than the window (`healthNoPeerMs`): since its last connection dropped,
 *   or since it started when it never had one here;
 * - `watcher`: the watcher's last scan failed (FILES_PATH gone or unreadable).
 */
import type { MeshView } from '../mesh/index.js'
import type { ApiContext } from './context.js'
import type { Health, HealthReason } from './wire/system.js'

export function healthOf (ctx: ApiContext, now = ctx.clock.now()): Health {
  const up = ctx.records.available()
  const mesh = ctx.mesh?.status()
  const clock = mesh?.self.clock ?? null
  const reasons: HealthReason[] = []
  if (!up) reasons.push({ reason: 'storage', message: 'storage unavailable' })
  if (clock?.inBound === false) reasons.push({ reason: 'clock', message: clock.message ?? 'this node\'s clock is out of the mesh\'s bound: its writes are refused' })
  const alone = mesh === undefined ? undefined : aloneForMs(mesh, ctx.startedAt, now)
  if (alone !== undefined && alone > ctx.healthNoPeerMs) {
    const known = mesh?.members.length ?? 0
    reasons.push({ reason: 'no_peer', message: `no peer reachable for ${Math.round(alone / 1000)} s (${known} members known): check META_CORE_BOOTSTRAP, the swarm key and the network` })
  }
  const failed = ctx.watcher?.status().lastError
  if (failed !== undefined) reasons.push({ reason: 'watcher', message: `the watcher's last scan failed at ${failed.at}: ${failed.message}` })
  return { status: reasons.length === 0 ? 'ok' : 'degraded', storage: up, redis: up, timestamp: new Date(now).toISOString(), clock, reasons }
}

/** How long a node in a mesh has had no connected peer (undefined: it has one, or it is standalone). */
function aloneForMs (m: MeshView, startedAt: number, now: number): number | undefined {
  if (!m.enabled || m.peers.some(p => p.connected)) return undefined
  let since = startedAt
  for (const x of [...m.peers, ...m.members]) {
    const t = x.lastConnectedAt === null ? NaN : Date.parse(x.lastConnectedAt)
    if (t > since) since = t
  }
  return Math.max(0, now - since)
}
