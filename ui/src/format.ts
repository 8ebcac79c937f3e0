/** Display helpers: sizes, dates, durations, a peer's catch-up lag. */

import type { MeshPeer } from './wire.js'

export function formatBytes (n: number | string | undefined): string {
  const v = typeof n === 'string' ? Number(n) : n
  if (v === undefined || !Number.isFinite(v) || v < 0) return ''
  const units = ['B', 'KB', 'MB', 'GB', 'TB']
  let x = v
  let u = 0
  while (x >= 1000 && u < units.length - 1) { x /= 1000; u++ }
  return `${u === 0 ? x : x.toFixed(x < 10 ? 1 : 0)} ${units[u]}`
}

export function formatCount (n: number | undefined | null): string {
  return n === undefined || n === null ? '—' : n.toLocaleString('en')
}

export function formatTime (iso: string | number | undefined | null): string {
  if (iso === undefined || iso === null || iso === '') return '—'
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return String(iso)
  return d.toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'medium' })
}

export function formatAgo (iso: string | number | undefined | null, now = Date.now()): string {
  if (iso === undefined || iso === null || iso === '') return 'never'
  const t = new Date(iso).getTime()
  if (Number.isNaN(t)) return String(iso)
  const s = Math.round((now - t) / 1000)
  if (s < 5) return 'just now'
  if (s < 90) return `${s} s ago`
  if (s < 5400) return `${Math.round(s / 60)} min ago`
  if (s < 129600) return `${Math.round(s / 3600)} h ago`
  return `${Math.round(s / 86400)} days ago`
}

export function formatDuration (seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return '—'
  const s = Math.max(0, Math.round(seconds))
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`
}

/**
 * A span in ms as `meta-core status` words it: 950 ms, 4.2 s, 3 min 5 s,
 * 2 h 10 min, 3 d 4 h. The page loads nothing of src/, so this mirrors
 * `duration` of src/node/status-command.ts; test/ui/format.test.ts holds
 * the two to the same output.
 */
export function formatMs (ms: number): string {
  if (!Number.isFinite(ms)) return '?'
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const s = Math.floor(ms / 1000)
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`
}

/** What the lag wording reads of a peer in `GET /api/mesh`. */
export type PeerLagFields = Pick<MeshPeer, 'connected' | 'cursor' | 'behind' | 'resyncing' | 'lastSyncAt' | 'lagMs'>

/**
 * A peer's catch-up lag in the words of `meta-core status` (mirrors its
 * `peerLag`, held equal by test/ui/format.test.ts): `caught up`, `behind 3.0 s`,
 * `full resync, 12.4 s`, `first sync, 950 ms` for a connected peer never
 * synced yet. One not connected is not pulled from: `was caught up when
 * last synced` (or `was behind …`), `never synced`, or `not synced since
 * start` for one synced only before the node started.
 */
export function formatPeerLag (p: PeerLagFields): string {
  if (p.resyncing) return `full resync, ${formatMs(p.lagMs)}`
  if (!p.connected) {
    if (p.lastSyncAt === null) return p.cursor === null ? 'never synced' : 'not synced since start'
    return p.behind ? 'was behind when last synced' : 'was caught up when last synced'
  }
  if (p.cursor === null && p.lastSyncAt === null) return `first sync, ${formatMs(p.lagMs)}`
  if (!p.behind) return 'caught up'
  return `behind ${formatMs(p.lagMs)}`
}

/** A long CID or id shortened in the middle for narrow cells (the full value stays in the title and the copy button). */
export function shortId (s: string, keep = 10): string {
  return s.length <= keep * 2 + 1 ? s : `${s.slice(0, keep)}…${s.slice(-keep)}`
}

/** The name a person knows a record by. */
export function recordTitle (m: Record<string, string>, fallback: string): string {
  return m.title ?? m.showtitle ?? m.fileName ?? m.filePath?.split('/').pop() ?? fallback
}

/** A key-set value (`scifi|noir`, the `_add` route's pipe-delimited set) as its members; undefined for a plain value. */
export function setMembers (value: string): string[] | undefined {
  if (!value.includes('|')) return undefined
  const parts = value.split('|').map(s => s.trim())
  return parts.every(p => p !== '') ? parts : undefined
}

/**
 * A field's value as people read it: a byte count in KB/MB/GB, a
 * nanosecond time as a date (`mtimeNano`, `*TimeNano`). Undefined when the
 * raw value is what to show. The raw value stays in the cell's title.
 */
export function readableValue (field: string, value: string): string | undefined {
  const leaf = field.split('/').pop() ?? field
  if (!/^\d{1,25}$/.test(value)) return undefined
  if (/^(sizeByte|size|sizeBytes|fileSize)$/i.test(leaf)) return formatBytes(Number(value))
  if (/Nano$/.test(leaf)) {
    // Nanoseconds exceed 2^53: the milliseconds are the digits but the last six.
    const ms = Number(value.length > 6 ? value.slice(0, -6) : '0')
    return formatTime(ms)
  }
  return undefined
}

/**
 * What the connection wording reads of a peer. The times and the route may
 * be absent, as `meta-core status` takes them (it asks nodes of any build):
 * the two say the same words for the same fields (test/ui/format.test.ts).
 */
type PeerConnectionFields = Pick<MeshPeer,
  'connected' | 'via'> & Partial<Pick<MeshPeer, 'lastSeenAt' | 'lastHeardAt' | 'lastConnectedAt' | 'route' | 'relay' | 'lan'>>

/**
 * True when the peer is not connected and a frame it signed reached the
 * node after its connection to it dropped (or it never had one): its
 * changes come through other peers. Mirrors `heardSinceLeft` of
 * src/node/status-command.ts (held equal by test/ui/format.test.ts).
 */
export function heardSinceLeft (p: Omit<PeerConnectionFields, 'via' | 'lastSeenAt'>): boolean {
  if (p.connected || p.lastHeardAt == null) return false
  return p.lastConnectedAt == null || Date.parse(p.lastHeardAt) > Date.parse(p.lastConnectedAt)
}

/**
 * How a peer reaches this node, as `/api/mesh` and `meta-core status` say
 * it: `connected` (`via relay <name>` when its connection runs through
 * another member, `(LAN)` when mDNS found it on this node's LAN); `via gossip` for a signer known only through frames other
 * peers relayed (its changes reach this node through them: nothing to
 * connect to or catch up with), with when one last came; for one that was
 * connected and is not, `disconnected, its changes reach us via gossip
 * (last heard …)` when its frames reached the node since it left, else
 * `disconnected, last seen …` (the peer's `lastSeenAt`, else its member
 * entry's, `memberSeenAt`).
 */
export function formatPeerConnection (p: PeerConnectionFields, memberSeenAt: string | undefined, now = Date.now(), relayName?: string): string {
  if (p.connected) return `connected${p.route === 'relayed' ? ` via relay ${relayName ?? p.relay ?? '?'}` : ''}${p.lan === true ? ' (LAN)' : ''}`
  const heard = p.lastHeardAt ?? null
  if (p.via === 'gossip') return heard === null ? 'via gossip' : `via gossip, last heard ${formatAgo(heard, now)}`
  if (heardSinceLeft(p)) return `disconnected, its changes reach us via gossip (last heard ${formatAgo(heard, now)})`
  const seen = p.lastSeenAt ?? memberSeenAt
  return seen === undefined ? 'disconnected' : `disconnected, last seen ${formatAgo(seen, now)}`
}
