/**
 * Event streams as rows of the kv table: `ev:<stream>/<ms13>-<seq10>` holds
 * the JSON of an entry's fields, `evhwm:<stream>` the last id issued (ids
 * never go back, even after a clear or a clock step), `evlow:<stream>` the
 * newest id a trim or clear removed (absent while nothing was ever lost).
 *
 * Appends happen inside a write function and become visible with its commit;
 * the in-memory state (last id, length) is snapshotted per write so a
 * rolled-back write leaves no trace. Trimming runs once per commit, and
 * walks only the rows it deletes.
 */
import { prefixEnd } from './keys.js'
import {
  type EventId, type EventIdParts, formatEventId, nextEventId, padEventId, parseEventId
} from './event-id.js'
import type { RowWriter, Statements } from './statements.js'
import type { StreamEntry } from './types.js'

interface StreamState {
  last: EventIdParts | undefined
  /** Appends since the last trim; in memory only, so a restart merely delays the next trim. */
  sinceTrim: number
  /** Retained entries, counted once on first use and kept up to date after. */
  length: number | undefined
}

export type StreamSnapshot = Map<string, StreamState>

const EV_PREFIX = 'ev:'
const HWM_PREFIX = 'evhwm:'
const LOW_PREFIX = 'evlow:'

export interface StreamsOptions {
  /** Entries kept per stream. */
  retention: number
  /** Trim a stream after this many appends. */
  trimEvery: number
  now: () => number
}

export class Streams {
  private readonly states = new Map<string, StreamState>()

  constructor (private readonly st: Statements, private readonly rows: RowWriter, private readonly o: StreamsOptions) {}

  /** Appends one entry; `out` collects it for the commit listeners. */
  append (out: StreamEntry[], stream: string, fields: Record<string, string>): EventId {
    const s = this.state(stream)
    const parts = nextEventId(s.last, this.o.now())
    s.last = parts
    s.sinceTrim++
    if (s.length !== undefined) s.length++
    const id = formatEventId(parts)
    this.st.put.run(`${EV_PREFIX}${stream}/${padEventId(parts)}`, JSON.stringify(fields))
    out.push({ stream, id, fields })
    return id
  }

  /** Appends entries with one multi-row write: one id each, in order. */
  appendMany (out: StreamEntry[], stream: string, entries: ReadonlyArray<Record<string, string>>): EventId[] {
    const s = this.state(stream)
    const rows: Array<[string, string]> = []
    const ids: EventId[] = []
    const now = this.o.now()
    const prefix = `${EV_PREFIX}${stream}/`
    for (const fields of entries) {
      const parts = nextEventId(s.last, now)
      s.last = parts
      const id = formatEventId(parts)
      rows.push([prefix + padEventId(parts), JSON.stringify(fields)])
      ids.push(id)
      out.push({ stream, id, fields })
    }
    s.sinceTrim += entries.length
    if (s.length !== undefined) s.length += entries.length
    this.rows.write(rows)
    return ids
  }

  /** Deletes every retained entry; the low-water mark moves to the last id issued. */
  clear (stream: string): void {
    const lo = `${EV_PREFIX}${stream}/`
    this.st.delRange.run(lo, prefixEnd(lo))
    const s = this.state(stream)
    s.length = 0
    if (s.last !== undefined) this.st.put.run(LOW_PREFIX + stream, formatEventId(s.last))
  }

  snapshot (): StreamSnapshot {
    const m: StreamSnapshot = new Map()
    for (const [k, v] of this.states) m.set(k, { ...v })
    return m
  }

  restore (snap: StreamSnapshot): void {
    this.states.clear()
    for (const [k, v] of snap) this.states.set(k, v)
  }

  /** At commit: writes each touched stream's high-water mark once, and trims streams past retention. */
  persist (events: readonly StreamEntry[]): void {
    if (events.length === 0) return
    const touched = new Set<string>()
    for (const e of events) touched.add(e.stream)
    for (const stream of touched) {
      const s = this.state(stream)
      if (s.last !== undefined) this.st.put.run(HWM_PREFIX + stream, formatEventId(s.last))
      if (s.sinceTrim >= this.o.trimEvery) {
        s.sinceTrim = 0
        const lo = `${EV_PREFIX}${stream}/`
        const hi = prefixEnd(lo)
        s.length ??= this.st.count.get(lo, hi) as number
        const excess = s.length - this.o.retention
        if (excess > 0) {
          // Walk only the `excess` oldest keys (not the retained ones) to find where to cut.
          const cut = this.st.keyAtOffset.get(lo, hi, excess - 1) as string | undefined
          if (cut !== undefined) {
            this.st.delRange.run(lo, cut + '\u0000')
            this.st.put.run(LOW_PREFIX + stream, formatEventId(parseEventId(cut.slice(lo.length))))
          }
          s.length = this.o.retention
        }
      }
    }
  }

  head (stream: string): EventId | undefined {
    const s = this.state(stream)
    return s.last === undefined ? undefined : formatEventId(s.last)
  }

  first (stream: string): EventId | undefined {
    const lo = `${EV_PREFIX}${stream}/`
    const k = this.st.firstKey.get(lo, prefixEnd(lo)) as string | undefined
    return k === undefined ? undefined : formatEventId(parseEventId(k.slice(lo.length)))
  }

  trimmedThrough (stream: string): EventId | undefined {
    const v = this.st.get.get(LOW_PREFIX + stream) as string | undefined
    return v === undefined ? undefined : formatEventId(parseEventId(v))
  }

  read (stream: string, after: EventIdParts | undefined, limit: number): StreamEntry[] {
    const lo = `${EV_PREFIX}${stream}/`
    const from = after === undefined ? lo : `${lo}${padEventId(after)}\u0000`
    const rows = this.st.rangeLimit.all(from, prefixEnd(lo), limit) as Array<[string, string]>
    return rows.map(([k, v]) => ({ stream, id: formatEventId(parseEventId(k.slice(lo.length))), fields: JSON.parse(v) as Record<string, string> }))
  }

  length (stream: string): number {
    const lo = `${EV_PREFIX}${stream}/`
    return this.st.count.get(lo, prefixEnd(lo)) as number
  }

  private state (stream: string): StreamState {
    let s = this.states.get(stream)
    if (s === undefined) {
      const hwm = this.st.get.get(HWM_PREFIX + stream) as string | undefined
      let last: EventIdParts | undefined = hwm === undefined ? undefined : parseEventId(hwm)
      if (last === undefined) {
        const lo = `${EV_PREFIX}${stream}/`
        const k = this.st.lastKey.get(lo, prefixEnd(lo)) as string | undefined
        if (k !== undefined) last = parseEventId(k.slice(lo.length))
      }
      s = { last, sinceTrim: 0, length: undefined }
      this.states.set(stream, s)
    }
    return s
  }
}
