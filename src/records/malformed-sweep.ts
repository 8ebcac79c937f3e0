/**
 * A one-time check, at open, for rows written with malformed text before
 * writes refused it.
 *
 * A JSON body could carry a lone UTF-16 surrogate (`"k\ud800"`); SQLite
 * stored it as bytes that are not UTF-8 (`k\xed\xa0\x80`) and reads them
 * back as U+FFFD. A key holding such bytes is an orphan: no request can
 * name it again (a replacing PUT did not remove it, DELETE left it behind,
 * and after a restart it was invisible yet still in the table). Now every
 * write path refuses such text (field-path.ts, and the API's JSON parser),
 * so once a store has been swept it stays clean; the sweep records that it
 * ran (`meta-core:utf8-swept`) and never reads the whole table again.
 *
 * Repair: every row whose key is not UTF-8 is deleted (a record field, its
 * version entry in `ver:<rid>`, a schema counter, a plain row). A record
 * left with no field at all leaves the root index, and the record counter
 * is rebuilt. Values that are not UTF-8 are reported, not changed: they are
 * addressable, read as U+FFFD and can be rewritten; changing them here
 * would change replicated data behind its version.
 */
import { isUtf8 } from 'node:buffer'
import type { Logger } from '../common/index.js'
import { prefixEnd, type KvStore } from '../kv/index.js'
import { COUNT_READY, FILE, ROOTS, VER } from './layout.js'
import { VersionMap } from './versions.js'
import { Fingerprints } from './fingerprints.js'

const UTF8_SWEPT_KEY = 'meta-core:utf8-swept'

const LONE_SURROGATE = /\p{Cs}/u
/** Examples named in the log: enough to find the rows, short enough for one line. */
const MAX_EXAMPLES = 5

interface MalformedSweepReport {
  /** False when the store had been swept before (nothing was read). */
  ran: boolean
  /** Rows whose key was not UTF-8, deleted. */
  orphanRows: number
  /** Rows whose value is not UTF-8, left as they are. */
  malformedValues: number
  /** Records left with no field, taken out of the root index. */
  emptiedRecords: number
}

/** `\xNN` for every byte outside printable ASCII: how a key that is not UTF-8 is named in the log. */
function spell (b: Buffer): string {
  let out = ''
  for (const x of b) out += x >= 0x20 && x < 0x7f && x !== 0x5c ? String.fromCharCode(x) : `\\x${x.toString(16).padStart(2, '0')}`
  return out.length > 160 ? out.slice(0, 157) + '...' : out
}

export function sweepMalformedRows (kv: KvStore, log: Logger): MalformedSweepReport {
  const report: MalformedSweepReport = { ran: false, orphanRows: 0, malformedValues: 0, emptiedRecords: 0 }
  if (kv.get(UTF8_SWEPT_KEY) !== undefined) return report
  report.ran = true
  const t0 = performance.now()
  log.info('checking the store once for rows written with malformed text (reads the whole table)')
  // Every byte sequence our writes could have produced from a lone surrogate starts 0xED (0xED 0xA0-0xBF):
  // SQLite filters on that byte, and only those rows are checked in full. One pass over the table, in C.
  const candidates = kv.prepare(
    "SELECT CAST(k AS BLOB), CAST(v AS BLOB) FROM kv WHERE instr(CAST(k AS BLOB), X'ED') > 0 OR instr(CAST(v AS BLOB), X'ED') > 0").raw()
  const orphans: Buffer[] = []
  const valueExamples: string[] = []
  for (const [k, v] of candidates.iterate() as IterableIterator<[Buffer, Buffer]>) {
    if (!isUtf8(k)) orphans.push(k)
    else if (!isUtf8(v)) {
      report.malformedValues++
      if (valueExamples.length < MAX_EXAMPLES) valueExamples.push(k.toString('utf8'))
    }
  }
  const del = kv.prepare('DELETE FROM kv WHERE k = CAST(? AS TEXT)')
  const touched = new Set<string>()
  kv.writeSync(tx => {
    for (const k of orphans) {
      // Deleted by its exact bytes: the key as a JS string (with U+FFFD) names no row.
      del.run(k)
      report.orphanRows++
      const text = k.toString('utf8') // lossy, but the root id before the field is ASCII
      if (text.startsWith(FILE)) touched.add(text.slice(FILE.length, text.indexOf('/', FILE.length)))
    }
    for (const rid of touched) {
      const raw = tx.get(VER + rid)
      if (raw !== undefined) {
        const vm = VersionMap.parse(raw)
        for (const f of [...vm.fields.keys()]) if (LONE_SURROGATE.test(f)) vm.fields.delete(f)
        if (vm.isEmpty) tx.delete(VER + rid)
        else tx.put(VER + rid, vm.serialize())
      }
      const lo = `${FILE}${rid}/`
      if (tx.keys(lo, prefixEnd(lo), 1).length === 0 && tx.delete(ROOTS + rid)) report.emptiedRecords++
    }
    // The record counter is rebuilt from the root index when the record layer opens.
    if (report.emptiedRecords > 0) tx.delete(COUNT_READY)
    // Version maps rewritten here, outside the mutation path: the range fingerprints are rebuilt at open.
    if (touched.size > 0) Fingerprints.invalidate(tx)
    tx.put(UTF8_SWEPT_KEY, '1') // not a time: two stores given the same inputs must write the same bytes
  })
  const seconds = Math.round((performance.now() - t0) / 100) / 10
  if (report.orphanRows > 0) {
    log.warn('removed rows whose key is not UTF-8 (written from a lone surrogate; no request could address them)', {
      rows: report.orphanRows, emptiedRecords: report.emptiedRecords, examples: orphans.slice(0, MAX_EXAMPLES).map(spell)
    })
  }
  if (report.malformedValues > 0) {
    log.warn('values that are not UTF-8 read as U+FFFD; rewrite them to repair', { rows: report.malformedValues, keys: valueExamples })
  }
  log.info('store checked for malformed text', { orphanRows: report.orphanRows, malformedValues: report.malformedValues, seconds })
  return report
}
