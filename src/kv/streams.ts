/**
 * Event streams as rows of the kv table: `ev:<stream>/<ms13>-<seq10>` holds
 * the entry with that id, `evhwm:<stream>` the last id issued (ids never go
 * back, even after a clear or a clock step), `evlow:<stream>` the newest id a
 * trim or clear removed (absent while nothing was ever lost).
 *
 * A row holds one entry (the JSON object of its fields) or, when one write
 * appends several entries at once (`appendMany`, as the record layer does
 * for the keys of one change), all of them packed in one row under the first
 * one's id. Their ids are issued at one wall time, so they are the first
 * id's milliseconds with consecutive sequence numbers: the row's key and its
 * entry count say every id, and key order is still id order. One row
 * instead of one per entry is what makes the change log cheap to write.
 * A packed row is stored by column when its entries share their keys
 * (stream-rows.ts: `~<n>~` then the field names once, the values every
 * entry shares once, each field's common prefix once): the change-log row
 * of a write of a 40-field record is about 970 bytes instead of the 3,770 of
 * a JSON array of its entries, the form entries with differing keys keep.
 * Rows of every form, earlier builds' included, are read, counted and
 * trimmed alike.
 * Readers see entries, never rows: a read after an id inside a packed row
 * starts within it, and retention counts entries (a trim cuts whole rows).
 *
 * Appends happen inside a write function and become visible with its commit;
 * the in-memory state (last id, length) is snapshotted per write so a
 * rolled-back write leaves no trace. Trimming runs once per commit, and
 * walks only the rows it deletes.
 */
import { prefixEnd } from './keys.js'
import {
  MAX_SEQ, type EventId, type EventIdParts, compareEventIds, formatEventId, nextEventId, padEventId, parseEventId
} from './event-id.js'
import type { RowWriter, Statements } from './statements.js'
import { decodeEntries, encodeEntries, entryCountOf } from './stream-rows.js'
import type { EntryRun, StreamEntry } from './types.js'

interface StreamState {
  last: EventIdParts | undefined
  /** Appends since the last trim; in memory only, so a restart merely delays the next trim. */
  sinceTrim: number
  /** Retained entries, counted once on first use and kept up to date after. */
  length: number | undefined
}

type StreamSnapshot = Map<string, StreamState>

const EV_PREFIX = 'ev:'
const HWM_PREFIX = 'evhwm:'
const LOW_PREFIX = 'evlow:'

interface StreamsOptions {
  /** Entries kept per stream. */
  retention: number
  /** Trim a stream after this many appends. */
  trimEvery: number
  now: () => number
}

export class Streams {
  private readonly states = new Map<string, StreamState>()

  constructor (private readonly st: Statements, private readonly rows: RowWriter, private readonly o: StreamsOptions) {}

  /** Appends one entry; `out` collects it (a run of one) for the commit listeners. */
  append (out: EntryRun[], stream: string, fields: Record<string, string>): EventId {
    const s = this.state(stream)
    const parts = nextEventId(s.last, this.o.now())
    s.last = parts
    s.sinceTrim++
    if (s.length !== undefined) s.length++
    this.st.put.run(`${EV_PREFIX}${stream}/${padEventId(parts)}`, JSON.stringify(fields))
    out.push({ stream, first: parts, entries: [fields] })
    return formatEventId(parts)
  }

  /**
   * Appends entries, one id each, in order, packed in one row (see the top
   * of this file); `out` collects them as one run for the commit listeners.
   */
  appendMany (out: EntryRun[], stream: string, entries: ReadonlyArray<Record<string, string>>): EventId[] {
    if (entries.length === 1) return [this.append(out, stream, entries[0])]
    if (entries.length === 0) return []
    const s = this.state(stream)
    const n = entries.length
    const ids = new Array<EventId>(n)
    const first = nextEventId(s.last, this.o.now())
    const prefix = `${EV_PREFIX}${stream}/`
    if (first.seq + n - 1 <= MAX_SEQ) {
      // The usual case: ids at one millisecond with consecutive sequence numbers, one packed row.
      const msDash = `${first.ms}-`
      for (let i = 0; i < n; i++) ids[i] = (msDash + String(first.seq + i)) as EventId
      s.last = { ms: first.ms, seq: first.seq + n - 1 }
      this.st.put.run(prefix + padEventId(first), encodeEntries(entries))
      out.push({ stream, first, entries })
    } else {
      // The sequence wraps into the next millisecond (ten billion ids in one ms): one row each, two runs.
      const rows = new Array<readonly [string, string]>(n)
      let last = first
      let runFirst = first
      let runStart = 0
      for (let i = 0; i < n; i++) {
        if (i > 0) {
          last = nextEventId(last, last.ms)
          if (last.ms !== runFirst.ms) {
            out.push({ stream, first: runFirst, entries: entries.slice(runStart, i) })
            runFirst = last
            runStart = i
          }
        }
        ids[i] = formatEventId(last)
        rows[i] = [prefix + padEventId(last), JSON.stringify(entries[i])]
      }
      out.push({ stream, first: runFirst, entries: entries.slice(runStart) })
      s.last = last
      this.rows.write(rows)
    }
    s.sinceTrim += n
    if (s.length !== undefined) s.length += n
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
  persist (runs: readonly EntryRun[]): void {
    if (runs.length === 0) return
    const touched = new Set<string>()
    for (const r of runs) touched.add(r.stream)
    for (const stream of touched) {
      const s = this.state(stream)
      if (s.last !== undefined) this.st.put.run(HWM_PREFIX + stream, formatEventId(s.last))
      if (s.sinceTrim >= this.o.trimEvery) {
        s.sinceTrim = 0
        const lo = `${EV_PREFIX}${stream}/`
        const hi = prefixEnd(lo)
        s.length ??= this.st.entryTotal.get(lo, hi) as number
        const excess = s.length - this.o.retention
        if (excess > 0) {
          // Walk only the oldest rows (not the retained ones) to find where to cut: whole rows, at most `excess` entries.
          let dropped = 0
          let cut: string | undefined
          let cutLast: EventIdParts | undefined
          for (const [k, n] of this.st.entryCounts.iterate(lo, hi) as IterableIterator<[string, number]>) {
            if (dropped + n > excess) break
            dropped += n
            cut = k
            const id = parseEventId(k.slice(lo.length))
            cutLast = { ms: id.ms, seq: id.seq + n - 1 }
          }
          if (cut !== undefined && cutLast !== undefined) {
            this.st.delRange.run(lo, cut + '\u0000')
            this.st.put.run(LOW_PREFIX + stream, formatEventId(cutLast))
          }
          s.length -= dropped
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

  /** Up to `limit` entries with ids after `after` (from the oldest retained when undefined), in id order. */
  read (stream: string, after: EventIdParts | undefined, limit: number): StreamEntry[] {
    const out: StreamEntry[] = []
    if (limit <= 0) return out
    const lo = `${EV_PREFIX}${stream}/`
    const hi = prefixEnd(lo)
    let from = lo
    if (after !== undefined) {
      // The row at or before the cursor may be a packed row with entries after it.
      const at = lo + padEventId(after)
      const row = this.st.rowAtOrBefore.get(lo, at) as [string, string] | undefined
      if (row !== undefined) unpack(stream, lo, row, after, out, limit)
      from = at + '\u0000'
    }
    while (out.length < limit) {
      // Every row holds at least one entry: never more rows than entries still wanted, and few at a time, as a row may hold many.
      const rows = this.st.rangeLimit.all(from, hi, Math.min(limit - out.length, READ_ROWS)) as Array<[string, string]>
      for (const row of rows) unpack(stream, lo, row, undefined, out, limit)
      if (rows.length === 0 || out.length >= limit) break
      from = rows[rows.length - 1][0] + '\u0000'
    }
    return out
  }

  /** Retained entries. */
  length (stream: string): number {
    const lo = `${EV_PREFIX}${stream}/`
    return this.st.entryTotal.get(lo, prefixEnd(lo)) as number
  }

  private state (stream: string): StreamState {
    let s = this.states.get(stream)
    if (s === undefined) {
      const hwm = this.st.get.get(HWM_PREFIX + stream) as string | undefined
      let last: EventIdParts | undefined = hwm === undefined ? undefined : parseEventId(hwm)
      if (last === undefined) {
        const lo = `${EV_PREFIX}${stream}/`
        const row = this.st.rowAtOrBefore.get(lo, prefixEnd(lo)) as [string, string] | undefined
        if (row !== undefined) last = lastIdOf(lo, row)
      }
      s = { last, sinceTrim: 0, length: undefined }
      this.states.set(stream, s)
    }
    return s
  }
}

/** Rows fetched per query while reading: a packed row can hold hundreds of entries. */
const READ_ROWS = 64

/** Appends the entries of one row with ids after `after` (all when undefined) to `out`, until it holds `limit`. */
function unpack (stream: string, lo: string, [k, v]: [string, string], after: EventIdParts | undefined, out: StreamEntry[], limit: number): void {
  const first = parseEventId(k.slice(lo.length))
  const list = decodeEntries(v)
  for (let i = 0; i < list.length && out.length < limit; i++) {
    const id = { ms: first.ms, seq: first.seq + i }
    if (after !== undefined && compareEventIds(id, after) <= 0) continue
    out.push({ stream, id: formatEventId(id), fields: list[i] })
  }
}

/** The id of a row's last entry. */
function lastIdOf (lo: string, [k, v]: [string, string]): EventIdParts {
  const first = parseEventId(k.slice(lo.length))
  return { ms: first.ms, seq: first.seq + entryCountOf(v) - 1 }
}

/** The entries of `runs`, in order, with their ids: all of them, or those of the streams `wants` accepts. */
export function entriesOf (runs: readonly EntryRun[], wants?: (stream: string) => boolean): StreamEntry[] {
  const out: StreamEntry[] = []
  for (const { stream, first, entries } of runs) {
    if (wants !== undefined && !wants(stream)) continue
    for (let i = 0; i < entries.length; i++) out.push({ stream, id: formatEventId({ ms: first.ms, seq: first.seq + i }), fields: entries[i] })
  }
  return out
}
