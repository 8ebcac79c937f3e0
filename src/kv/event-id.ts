import type { Brand } from '../common/index.js'

/**
 * Event ids keep the Redis `<ms>-<seq>` shape so cursors stored by clients of
 * the original still compare. On disk they are zero-padded (`<ms13>-<seq10>`)
 * so that key order is id order.
 */
export type EventId = Brand<string, 'EventId'>

export interface EventIdParts { ms: number, seq: number }

/** The external form, `<ms>-<seq>` without padding. */
export function formatEventId (p: EventIdParts): EventId {
  return `${p.ms}-${p.seq}` as EventId
}

/** The on-disk suffix, `<ms13>-<seq10>`. */
export function padEventId (p: EventIdParts): string {
  return `${String(p.ms).padStart(13, '0')}-${String(p.seq).padStart(10, '0')}`
}

/**
 * Parses a client cursor leniently, as the original did: `<ms>-<seq>` or a
 * bare `<ms>`; malformed parts count as 0. Never throws.
 */
export function parseEventId (s: string): EventIdParts {
  const dash = s.indexOf('-')
  const msPart = dash < 0 ? s : s.slice(0, dash)
  const seqPart = dash < 0 ? '' : s.slice(dash + 1)
  return { ms: toCount(msPart), seq: toCount(seqPart) }
}

function toCount (s: string): number {
  if (!/^\d{1,16}$/.test(s.trim())) return 0
  const n = Number(s.trim())
  return Number.isSafeInteger(n) ? n : 0
}

export function compareEventIds (a: EventIdParts, b: EventIdParts): number {
  return a.ms !== b.ms ? (a.ms < b.ms ? -1 : 1) : (a.seq === b.seq ? 0 : (a.seq < b.seq ? -1 : 1))
}

/** The largest sequence number (ten digits on disk); the next id moves to the next millisecond. */
export const MAX_SEQ = 9_999_999_999

/** The next id after `last` at wall time `now`: strictly increasing even when the clock steps back. */
export function nextEventId (last: EventIdParts | undefined, now: number): EventIdParts {
  if (last === undefined || now > last.ms) return { ms: now, seq: 0 }
  if (last.seq >= MAX_SEQ) return { ms: last.ms + 1, seq: 0 }
  return { ms: last.ms, seq: last.seq + 1 }
}
