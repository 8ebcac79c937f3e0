/**
 * Writes made on this node (the API, the watcher): each is one kv write
 * function, stamped with one fresh version, through the mutation path.
 * Writes addressed by any CID land on the group's canonical root; an unknown
 * CID becomes a new record holding that CID; a deleted root id is revived by
 * a newer write.
 */
import type { Tx } from '../kv/index.js'
import { issueVersion, type RecordContext } from './context.js'
import { InvalidValueError, SelfAliasError } from './errors.js'
import { checkWritableField, validateFieldPath, validateValue } from './field-path.js'
import { checkAddress, checkFields } from './input.js'
import { fieldKey, membersOf, readFields } from './layout.js'
import type { FieldChange } from './mutation.js'
import type { RecordReader } from './reads.js'
import { isRecordId, type RecordId } from './record-id.js'
import type { WriteResult } from './types.js'

/** Fields the store itself owns: a replacing write (`setFlat`) keeps them. */
const OWNED_FIELD_PREFIXES = ['filePath', 'sizeByte', 'mtimeNano', 'cids/', 'holders/']

function isOwnedField (f: string): boolean {
  return OWNED_FIELD_PREFIXES.some(p => f === p || (p.endsWith('/') && f.startsWith(p)))
}

export class LocalWriter {
  constructor (private readonly ctx: RecordContext, private readonly reads: RecordReader) {}

  /**
   * Mints a new root for a file on this node's disk. With `inheritFrom`, the
   * record at that address (read inside the same transaction) hands its
   * fields over: every field but those the store owns (`OWNED_FIELD_PREFIXES`:
   * the path, size and mtime, and every `cids/` member, which name the old
   * bytes) is copied to the new root. This is how a file whose bytes changed
   * in place keeps the titles, ids and corrections people and plugins gave it.
   */
  async mint (filePath: string, sizeByte: number | string, mtimeNano: number | bigint | string, extra: Record<string, string> = {},
    opts: { inheritFrom?: string } = {}): Promise<RecordId> {
    validateValue(filePath)
    const fields: Record<string, string> = { ...extra, filePath, sizeByte: String(sizeByte), mtimeNano: String(mtimeNano) }
    const changes = checkFields(fields, false)
    if (opts.inheritFrom !== undefined) checkAddress(opts.inheritFrom)
    return await this.ctx.write(tx => {
      const rid = this.ctx.mintId(this.ctx.now())
      const version = issueVersion(this.ctx, tx)
      const list: FieldChange[] = []
      const from = opts.inheritFrom === undefined ? undefined : this.reads.resolveRoot(opts.inheritFrom, tx)
      if (from !== undefined) {
        for (const [field, value] of Object.entries(this.reads.mergedFields(tx, from))) {
          if (!isOwnedField(field) && !Object.hasOwn(fields, field)) list.push({ field, value, version })
        }
      }
      for (const [field, value] of changes) list.push({ field, value, version })
      this.ctx.mutator.mutate(tx, rid, list)
      return rid
    })
  }

  /**
   * Deletes every record, `batch` canonical roots per transaction (a large
   * library is never one giant transaction), each as `deleteRoot` does.
   * Returns how many records (groups counted once) it removed. Records
   * written while it runs may survive it.
   */
  async deleteAll (opts: { batch?: number, onProgress?: (deleted: number) => void } = {}): Promise<number> {
    const batch = opts.batch ?? 500
    let deleted = 0
    for (;;) {
      const roots = this.reads.listRoots({ limit: batch })
      if (roots.length === 0) return deleted
      deleted += await this.ctx.write(tx => {
        let n = 0
        for (const rid of roots) {
          // Still the live canonical root of its group (a write since the listing may have changed that).
          if (this.reads.resolveRoot(rid, tx) !== rid) continue
          this.deleteRootTx(tx, rid)
          n++
        }
        return n
      })
      opts.onProgress?.(deleted)
    }
  }

  /** Writes the given fields, leaving the others (PATCH). An unknown CID address creates a record with that CID as a member. */
  async mergeFlat (addr: string, fields: Record<string, string>): Promise<WriteResult> {
    checkAddress(addr)
    const changes = checkFields(fields, true)
    return await this.ctx.write(tx => this.writeTx(tx, addr, changes, false))
  }

  /**
   * Replaces the record's fields with `fields`, keeping the fields the store
   * owns (filePath, sizeByte, mtimeNano, cids/, holders/).
   */
  async setFlat (addr: string, fields: Record<string, string>): Promise<WriteResult> {
    checkAddress(addr)
    const changes = checkFields(fields, true)
    return await this.ctx.write(tx => this.writeTx(tx, addr, changes, true))
  }

  /** Deletes one field (on every root of the group that holds it). */
  async deleteProperty (addr: string, field: string): Promise<{ rid: RecordId | undefined, deleted: boolean }> {
    validateFieldPath(field)
    checkAddress(addr)
    return await this.ctx.write(tx => {
      const rid = this.reads.resolveRoot(addr, tx)
      if (rid === undefined) return { rid, deleted: false }
      const version = issueVersion(this.ctx, tx)
      let deleted = false
      for (const m of membersOf(tx, rid)) {
        if (tx.get(fieldKey(m, field)) === undefined) continue
        this.ctx.mutator.mutate(tx, m, [{ field, value: null, version }])
        deleted = true
      }
      return { rid, deleted }
    })
  }

  /**
   * Adds `member` to a pipe-delimited set field (`a|b|c`), as the original's
   * `_add` route did; a member already present is a no-op.
   */
  async addToSet (addr: string, field: string, member: string): Promise<WriteResult & { added: boolean }> {
    checkWritableField(field)
    validateValue(member)
    if (member.includes('|')) throw new InvalidValueError('a set member cannot contain "|"')
    checkAddress(addr)
    return await this.ctx.write(tx => {
      const rid = this.reads.resolveRoot(addr, tx)
      const cur = rid === undefined ? undefined : this.reads.mergedFields(tx, rid)[field]
      const members = cur === undefined || cur === '' ? [] : cur.split('|')
      if (members.includes(member)) return { rid: rid!, updated: 0, created: false, added: false }
      members.push(member)
      const value = members.join('|')
      validateValue(value)
      const r = this.writeTx(tx, addr, [[field, value]], false)
      return { ...r, added: true }
    })
  }

  /** Registers `cid` as an alias of the record at `addr` (the `cids/<cid>` member and the reverse index). */
  async addAlias (addr: string, cid: string): Promise<WriteResult> {
    if (cid === addr && isRecordId(addr)) throw new SelfAliasError()
    return await this.mergeFlat(addr, { [`cids/${cid}`]: 'true' })
  }

  /**
   * Deletes the record: every key of every root of its group, its aliases,
   * duplicates and index entries, leaving a root tombstone. Idempotent.
   */
  async deleteRoot (addr: string): Promise<{ rid: RecordId | undefined, deleted: number }> {
    checkAddress(addr)
    return await this.ctx.write(tx => {
      const rid = this.reads.resolveRoot(addr, tx)
      return { rid, deleted: rid === undefined ? 0 : this.deleteRootTx(tx, rid) }
    })
  }

  /** Inside a write: tombstones every root of the group; returns how many keys were removed. */
  deleteRootTx (tx: Tx, rid: RecordId): number {
    const version = issueVersion(this.ctx, tx)
    let deleted = 0
    for (const m of membersOf(tx, rid)) {
      deleted += this.ctx.mutator.mutate(tx, m, [], { rootTombstone: version }).changed
    }
    return deleted
  }

  private writeTx (tx: Tx, addr: string, changes: ReadonlyArray<[string, string]>, replace: boolean): WriteResult {
    let rid = this.reads.resolveRoot(addr, tx)
    let created = false
    const list = [...changes]
    if (rid === undefined) {
      if (isRecordId(addr)) {
        rid = addr // writing to a deleted root revives it (the new version beats its tombstone)
      } else {
        // An unknown CID: a new record, addressed by that CID from now on. A client that named the member
        // itself keeps its place in the list (the value is always 'true'), so the field is named once.
        rid = this.ctx.mintId(this.ctx.now())
        const member = `cids/${addr}`
        const named = list.findIndex(([f]) => f === member)
        if (named >= 0) list[named] = [member, 'true']
        else list.push([member, 'true'])
        created = true
      }
    }
    const version = issueVersion(this.ctx, tx)
    const stamped = list.map(([field, value]): FieldChange => ({ field, value, version }))
    if (replace) {
      const given = new Set(list.map(([f]) => f))
      for (const m of membersOf(tx, rid)) {
        const drop: FieldChange[] = []
        for (const f of readFields(tx, m).keys()) {
          if (given.has(f) || isOwnedField(f)) continue
          drop.push({ field: f, value: null, version })
        }
        if (drop.length > 0 && m !== rid) this.ctx.mutator.mutate(tx, m, drop)
        else if (drop.length > 0) stamped.push(...drop)
      }
    }
    const r = this.ctx.mutator.mutate(tx, rid, stamped)
    return { rid, updated: r.changed, created }
  }
}
