/** Display helpers: sizes, dates, durations. */

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

/** A long CID or id shortened in the middle for narrow cells (the full value stays in the title and the copy button). */
export function shortId (s: string, keep = 10): string {
  return s.length <= keep * 2 + 1 ? s : `${s.slice(0, keep)}…${s.slice(-keep)}`
}

/** The name a person knows a record by. */
export function recordTitle (m: Record<string, string>, fallback: string): string {
  return m.title ?? m.showtitle ?? m.fileName ?? m.filePath?.split('/').pop() ?? fallback
}
