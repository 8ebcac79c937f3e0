/**
 * The one synchronous write path every record change goes through, inside a
 * kv transaction: field rows, versions, liveness (`idx:roots`), the visible
 * record counter, schema counters, the `cid:` reverse index, groups, the
 * change-log entries (one per key whose version changed, root tombstones
 * included) and the indexer hooks (search). Local writes and remote merges
 * share it, so both maintain exactly the same derived state.
 *
 * Groups: roots that share any CID are one record (docs/design/data-model.md#groups). The
 * group's canonical root is its smallest rid; `cid:<cid>` points at it. The
 * membership (`idx:grp/`, `idx:grpm/`) is derived locally from the cids/
 * members, so every node that holds the same roots derives the same groups and
 * nothing new is written into the mesh (groups.ts).
 */
import type { Tx } from '../kv/index.js'
import {
  COUNT_ROOTS, DUP, LOC, ROOTS, VER, canonOf, fieldKey, membersOf, readFields
} from './layout.js'
import { prefixEnd } from '../kv/index.js'
import { cidMemberOf } from './field-path.js'
import { ChangeBatch, type ChangeLog } from './change-log.js'
import { schemaCounterKey } from './schema-type.js'
import { VersionMap, type Version } from './versions.js'
import { isRecord } from './record-liveness.js'
import { mirrorLocation } from './local-location.js'
import { Groups } from './groups.js'
import type { RecordId } from './record-id.js'
import type { Fingerprints } from './fingerprints.js'

/**
 * Derived structures told of every record change inside the write
 * transaction (search stages the changed roots there and indexes them
 * later, outside the writers' commits).
 */
export interface RecordIndexer {
  /** The live fields of `rid` changed (`fields` names them, each once). */
  onRecordChanged?: (tx: Tx, rid: RecordId, fields: Iterable<string>) => void
  /** `rid` has no live field left. */
  onRecordDeleted?: (tx: Tx, rid: RecordId) => void
  /** The group membership of these roots changed (a union or a split). */
  onGroupChanged?: (tx: Tx, roots: readonly RecordId[]) => void
  /**
   * Asked before each write is queued: a promise makes the write wait until
   * it settles (the indexer's deferred work is at its bound, so writers
   * slow down instead of letting it grow); undefined lets it through.
   */
  whenWritable?: () => Promise<void> | undefined
  /**
   * Inside each transaction of a bulk apply (bulk-apply.ts), once, instead
   * of the per-record hooks above for its records: the indexer takes its
   * derived work as deferred (it rebuilds from the rows later). `roots`: the
   * first and last root (in key order) the transaction applies.
   */
  onBulkApply?: (tx: Tx, roots: BulkRoots) => void
  /**
   * A bulk apply has ended (its last page is committed; `ordered`: every transaction's roots came after the previous one's): the deferred
   * work may be completed now.
   */
  onBulkEnd?: (ordered: boolean) => void
}

/** The roots of one bulk transaction, in key order: its first and its last. */
export interface BulkRoots {
  first: RecordId
  last: RecordId
}

const NO_INDEXERS: readonly RecordIndexer[] = []

export interface FieldChange {
  field: string
  /** null deletes (leaves a tombstone). */
  value: string | null
  version: Version
  /** The row's key, `file:<rid>/<field>`, when the caller holds it already (a remote entry's): not built again. */
  key?: string
}

interface MutationOptions {
  /** Root tombstone to apply before the changes (DeleteRoot, local or remote). */
  rootTombstone?: Version
  /**
   * Remote merge: each change is applied only if it wins (a newer version,
   * or at an equal one the tie's winner: versions.ts `beats`), and a
   * version-only change (same value, newer version) is still published so
   * peers pulling from this node learn it. Local writes always win (the HLC
   * is ahead of everything observed) and a same-value write is a no-op.
   */
  remote?: boolean
}

interface MutationResult {
  /** Keys whose value changed (set or deleted). */
  changed: number
  /** Keys whose version changed (value changes and version-only changes). */
  touched: number
  live: boolean
}

export class Mutator {
  private readonly indexers: RecordIndexer[]

  private readonly groups: Groups
  /** Inside a bulk apply's transaction: the per-record hooks are not called (onBulkApply was). */
  private bulk = false

  constructor (indexers: readonly RecordIndexer[], private readonly changeLog: ChangeLog, private readonly fingerprints?: Fingerprints) {
    this.indexers = [...indexers]
    this.groups = new Groups(() => this.hooks())
  }

  /** The indexers to tell of each record change now: none inside a bulk apply. */
  private hooks (): readonly RecordIndexer[] {
    return this.bulk ? NO_INDEXERS : this.indexers
  }

  /**
   * Runs `fn` (inside the write `tx`) as a bulk apply of `roots`: each
   * indexer is told once (onBulkApply) and none of the record changes `fn`
   * makes reach the per-record hooks.
   */
  inBulk<T> (tx: Tx, roots: BulkRoots, fn: () => T): T {
    for (const ix of this.indexers) ix.onBulkApply?.(tx, roots)
    this.bulk = true
    try {
      return fn()
    } finally {
      this.bulk = false
    }
  }

  /** A bulk apply ended: each indexer may build its deferred work. */
  bulkEnded (ordered: boolean): void {
    for (const ix of this.indexers) ix.onBulkEnd?.(ordered)
  }

  /** Inside a write: `rid` holds `cid` (the cid: index and groups, as a write that adds the member registers it: groups.ts). */
  aliasAdded (tx: Tx, rid: RecordId, cid: string): void {
    this.groups.aliasAdded(tx, rid, cid)
  }

  addIndexer (ix: RecordIndexer): void {
    this.indexers.push(ix)
  }

  /** Settles when every indexer takes more writes; undefined (no wait at all) in the usual case. */
  whenWritable (): Promise<void> | undefined {
    let waits: Array<Promise<void>> | undefined
    for (const ix of this.indexers) {
      const w = ix.whenWritable?.()
      if (w !== undefined) (waits ??= []).push(w)
    }
    return waits === undefined ? undefined : Promise.all(waits).then(() => {})
  }

  mutate (tx: Tx, rid: RecordId, changes: readonly FieldChange[], opts: MutationOptions = {}): MutationResult {
    const cur = readFields(tx, rid)
    const verKey = VER + rid
    const verRaw = tx.get(verKey)
    if (cur.size === 0 && verRaw === undefined && opts.rootTombstone === undefined) {
      const r = this.mutateUnheld(tx, rid, changes, opts.remote === true)
      if (r !== undefined) return r
    }
    const vm = VersionMap.parse(verRaw)
    // Liveness as stored (idx:roots), not recomputed: a store written before the rule below keeps its count straight.
    const wasLive = cur.size > 0 && tx.get(ROOTS + rid) !== undefined
    const changed = new Set<string>()
    // The record's cids/ members before this mutation: aliases follow the net change, so a member set and
    // deleted again within one batch (two peers' versions of it) registers nothing.
    const cidsBefore = new Set<string>()
    for (const f of cur.keys()) if (cidMemberOf(f) !== undefined) cidsBefore.add(f)
    let touched = 0
    // Change-log rows in the order the changes happen; sets join at the end, with their multi-row write.
    const log = new ChangeBatch()

    // Puts are collected and written at the end with multi-row statements: `pending` maps a key to its row
    // [key, value, the value it held before this mutation, version], which putMany takes as it is.
    const pending = new Map<string, [string, string, string | undefined, Version]>()
    const del = (field: string, version: Version): void => {
      const old = cur.get(field)
      if (old === undefined) return
      const k = fieldKey(rid, field)
      const p = pending.get(k)
      if (p !== undefined) {
        // Set earlier in this same mutation: drop the pending put; delete only what was there before.
        pending.delete(k)
        if (p[2] !== undefined) tx.delete(k)
      } else {
        tx.delete(k)
      }
      // Logged even when the key only existed within this mutation: its version changed, and peers pulling from us must learn the tombstone.
      log.del(k, version)
      cur.delete(field)
      tx.addCounter(schemaCounterKey(field, old), -1)
      changed.add(field)
    }

    if (opts.rootTombstone !== undefined && (vm.root === undefined || opts.rootTombstone > vm.root)) {
      const rt = opts.rootTombstone
      // The root tombstone has its own row, so a peer pulling changes learns it even for a root it never held.
      log.del(`file:${rid}`, rt)
      for (const field of [...cur.keys()]) {
        const fv = vm.fields.get(field)
        if (fv === undefined || fv <= rt) del(field, rt)
      }
      vm.setRoot(rt)
      touched++
    }

    for (const ch of changes) {
      const { field, value, version } = ch
      const old = cur.get(field)
      if (opts.remote === true && !vm.beats(field, version, value, () => old)) continue
      const k = ch.key ?? fieldKey(rid, field)
      if (value === null) {
        if (old === undefined) {
          if (opts.remote === true) {
            // A tombstone for a key we never held: keep its version and pass it on.
            vm.fields.set(field, version)
            log.del(k, version)
            touched++
          }
          continue
        }
        del(field, version)
        vm.fields.set(field, version)
        touched++
        continue
      }
      if (old === value) {
        if (opts.remote === true) {
          vm.fields.set(field, version)
          log.set(k, value, version)
          touched++
        }
        continue
      }
      const p = pending.get(k)
      pending.set(k, [k, value, p === undefined ? old : p[2], version])
      cur.set(field, value)
      vm.fields.set(field, version)
      touched++
      if (old !== undefined) tx.addCounter(schemaCounterKey(field, old), -1)
      tx.addCounter(schemaCounterKey(field, value), 1)
      changed.add(field)
    }

    // Field rows, the version map and (for a record coming to life) its idx:roots row go in with one
    // multi-row write; deletes above were applied one by one.
    const puts: Array<readonly [string, string, string | undefined, ...unknown[]]> = []
    for (const p of pending.values()) {
      puts.push(p)
      // A key set and set back within this mutation wrote nothing and logs nothing.
      if (p[1] !== p[2]) log.set(p[0], p[1], p[3])
    }
    const logId = this.changeLog.append(tx, log)
    if (touched > 0) {
      const ser = vm.serialize()
      puts.push([verKey, ser, verRaw]) // the old value is known: no read before the write
      this.fingerprints?.changed(tx, rid, vm, ser, cur, verRaw === undefined, logId, log.rows.length)
    }

    if (opts.remote !== true) mirrorLocation(tx, rid, changes, false)
    const live = isRecord(cur, vm)
    if (live && !wasLive) {
      // Not live before, so not visible before; visible after when canonical (a root not live is in no group).
      puts.push([ROOTS + rid, '', undefined])
      tx.putMany(puts)
      if (canonOf(tx, rid) === rid) tx.addCounter(COUNT_ROOTS, 1)
    } else {
      tx.putMany(puts)
      if (!live && wasLive) {
        const group = membersOf(tx, canonOf(tx, rid))
        this.groups.adjustCount(tx, [rid], () => { tx.delete(ROOTS + rid) })
        const lo = `${DUP}${rid}/`
        for (const k of tx.keys(lo, prefixEnd(lo))) tx.delete(k)
        tx.delete(LOC + rid)
        for (const ix of this.hooks()) ix.onRecordDeleted?.(tx, rid)
        if (group.length > 1) this.groups.regroup(tx, group)
      }
    }

    // The cid: index names live roots only: a root that stops being a record with cids/ members still held
    // (its last holder released it) gives up all of them, one that becomes a record again takes all of its own.
    const cidAdds: string[] = []
    const cidRemoves: string[] = []
    if (wasLive && !live) {
      for (const f of cidsBefore) cidRemoves.push(f.slice(5))
    } else if (live && !wasLive) {
      for (const f of cur.keys()) { const c = cidMemberOf(f); if (c !== undefined) cidAdds.push(c) }
    } else if (live) {
      for (const f of changed) {
        const c = cidMemberOf(f)
        if (c === undefined) continue
        const was = cidsBefore.has(f)
        if (was && !cur.has(f)) cidRemoves.push(c)
        else if (!was && cur.has(f)) cidAdds.push(c)
      }
    }
    for (const c of cidRemoves) this.groups.aliasRemoved(tx, rid, c)
    for (const c of cidAdds) this.groups.aliasAdded(tx, rid, c)

    if (live && !wasLive) {
      // Back to life with fields this change did not touch (a holder's add arriving after the last release): all are new to the indexers.
      for (const f of cur.keys()) changed.add(f)
    }
    if (live && changed.size > 0) for (const ix of this.hooks()) ix.onRecordChanged?.(tx, rid, changed)
    return { changed: changed.size, touched, live }
  }

  /**
   * `mutate` for a root this store holds nothing of (no field, no version):
   * what a resync or an import brings, root after root. With nothing held
   * there is nothing to compare with, undo or delete: every change is
   * taken (a local delete of a field never held is no change at all), so
   * the rows, the change log and the derived state are built straight
   * from the list, as the general path would build them, in the same
   * order. A field named twice (set twice, or set and then deleted)
   * needs the general path's ordering: then this returns undefined having
   * written nothing.
   */
  private mutateUnheld (tx: Tx, rid: RecordId, changes: readonly FieldChange[], remote: boolean): MutationResult | undefined {
    const vm = new VersionMap()
    const log = new ChangeBatch()
    // The rows to write ([key, value, old value: none]), and each field row's field and version.
    const puts: Array<readonly [string, string, undefined]> = []
    const fields: string[] = []
    const versions: Version[] = []
    for (const ch of changes) {
      const { field, value, version } = ch
      if (value === null && !remote) {
        // A local delete of a field never held changes nothing, unless this list set the field before it.
        if (vm.fields.has(field)) return undefined
        continue
      }
      const named = vm.fields.size
      vm.fields.set(field, version)
      if (vm.fields.size === named) return undefined
      if (value === null) {
        // A peer's tombstone for a key never held: kept and passed on.
        log.del(ch.key ?? fieldKey(rid, field), version)
        continue
      }
      puts.push([ch.key ?? fieldKey(rid, field), value, undefined])
      fields.push(field)
      versions.push(version)
    }
    const touched = vm.fields.size
    if (!remote) mirrorLocation(tx, rid, changes, true)
    const live = fields.length > 0 && isRecord({ size: fields.length, keys: () => fields.values() }, vm)
    // As in the general path: the tombstones logged in list order, then the sets.
    for (let i = 0; i < fields.length; i++) {
      const [k, value] = puts[i]
      log.set(k, value, versions[i])
      tx.addCounter(schemaCounterKey(fields[i], value), 1)
    }
    const logId = this.changeLog.append(tx, log)
    if (touched > 0) {
      const ser = vm.serialize()
      puts.push([VER + rid, ser, undefined])
      this.fingerprints?.changed(tx, rid, vm, ser, { names: fields, values: puts.slice(0, fields.length).map(p => p[1]) }, true, logId, log.rows.length)
    }
    if (!live) {
      tx.putMany(puts)
      return { changed: fields.length, touched, live }
    }
    puts.push([ROOTS + rid, '', undefined])
    tx.putMany(puts)
    if (canonOf(tx, rid) === rid) tx.addCounter(COUNT_ROOTS, 1)
    for (const f of fields) {
      const c = cidMemberOf(f)
      if (c !== undefined) this.groups.aliasAdded(tx, rid, c)
    }
    for (const ix of this.hooks()) ix.onRecordChanged?.(tx, rid, fields)
    return { changed: fields.length, touched, live }
  }
}

