/**
 * The record writes of a lifecycle step, queued (not awaited) so that the
 * lifecycle writer's event for the step joins them in one store transaction
 * (lifecycle-writer.ts says how): a file's arrival, its move, and the
 * release of a copy that is gone or changed.
 */
import type { Logger } from '../common/index.js'
import type { LocalCopy, ReleaseResult } from '../records/index.js'
import { FILES_MOUNT, type FileEntry, type FileState } from './file-state.js'
import type { SeenStep } from './lifecycle-writer.js'
import type { WatcherRecords } from './types.js'

export interface RecordOpsDeps {
  records: WatcherRecords
  state: FileState
  /** This node's holder field (`holders/<id>`). */
  holder: string
  logger: Logger
  /** A path the records name as a copy on this node that the state did not know: look at it. */
  recheck: (rel: string) => void
}

export class RecordOps {
  private readonly records: WatcherRecords
  private readonly state: FileState
  private readonly holder: string
  private readonly log: Logger
  private readonly recheck: (rel: string) => void

  constructor (d: RecordOpsDeps) {
    this.records = d.records
    this.state = d.state
    this.holder = d.holder
    this.log = d.logger
    this.recheck = d.recheck
  }

  /**
   * Records `abs` as holding `s.cid`: a new root (filePath, size, mtime, the
   * midhash alias and our holder member in one write), or the known record's
   * filePath when it has none (an API-written record), a size/mtime refresh
   * when it is already its filePath, else a duplicate path. A new root for
   * content that replaced `inheritFrom` at the same path takes over that
   * record's fields. Returns whether a root is minted.
   */
  arrival (writes: Array<Promise<unknown>>, abs: string, s: SeenStep, inheritFrom?: string): boolean {
    const doc = this.records.getFlat(s.cid)
    if (doc === undefined) {
      const own = { [`cids/${s.cid}`]: 'true', [this.holder]: 'true' }
      writes.push(this.records.mint(abs, s.size, s.mtimeNs, own, inheritFrom === undefined ? {} : { inheritFrom }))
      return true
    }
    const fields: Record<string, string> = {}
    const size = String(s.size)
    // This node's own location, not the replicated one (another node's path): records' local-location.ts.
    const own = this.records.ownLocation(s.cid)
    if (own?.filePath === undefined) {
      fields.filePath = abs
      fields.sizeByte = size
      fields.mtimeNano = s.mtimeNs
    } else if (own.filePath === abs) {
      if (own.sizeByte !== size) fields.sizeByte = size
      if (own.mtimeNano !== s.mtimeNs) fields.mtimeNano = s.mtimeNs
    } else if (!this.isDuplicate(s.cid, abs)) {
      writes.push(this.records.addDuplicatePath(s.cid, abs))
    }
    if (doc[this.holder] === undefined) fields[this.holder] = 'true'
    if (Object.keys(fields).length > 0) writes.push(this.records.mergeFlat(s.cid, fields))
    return false
  }

  /** Moves the record's path from `oldAbs` to `abs` (same content); returns whether a root is minted (the record went away meanwhile). */
  move (writes: Array<Promise<unknown>>, oldAbs: string, abs: string, s: SeenStep): boolean {
    const doc = this.records.getFlat(s.cid)
    if (doc !== undefined && this.records.ownLocation(s.cid)?.filePath === oldAbs) {
      const fields: Record<string, string> = { filePath: abs, sizeByte: String(s.size), mtimeNano: s.mtimeNs }
      if (doc[this.holder] === undefined) fields[this.holder] = 'true'
      writes.push(this.records.mergeFlat(s.cid, fields))
      return false
    }
    if (doc !== undefined && this.isDuplicate(s.cid, oldAbs)) {
      writes.push(this.records.removeFilePath(s.cid, oldAbs))
    }
    return this.arrival(writes, abs, s)
  }

  /**
   * `rel` no longer holds `prior.cid`: one `releaseCopy` with the other
   * paths the state knows for that content (see LifecycleWriter's comment). Returns
   * what to run once the step's state is applied: the record's local paths
   * the state does not know become unconfirmed entries, each looked at.
   */
  removal (writes: Array<Promise<unknown>>, rel: string, prior: FileEntry): () => void {
    const cid = prior.cid
    if (this.records.getFlat(cid) === undefined) return () => {}
    const copies: LocalCopy[] = []
    for (const other of this.state.pathsOf(cid)) {
      if (other === rel) continue
      const e = this.state.get(other)!
      // An unconfirmed entry's size and mtime are not known to describe the file now.
      copies.push(e.fresh || e.size < 0 ? { path: FILES_MOUNT + other } : { path: FILES_MOUNT + other, sizeByte: String(e.size), mtimeNano: e.mtimeNs })
    }
    let result: ReleaseResult | undefined
    writes.push(this.records.releaseCopy(cid, FILES_MOUNT + rel, this.holder.slice('holders/'.length), { copies }).then(r => { result = r }))
    return () => {
      if (result?.kind !== 'kept') return
      for (const p of result.localPaths) {
        if (!p.startsWith(FILES_MOUNT)) continue
        const r = p.slice(FILES_MOUNT.length)
        if (r === rel || this.state.get(r) !== undefined) continue
        this.state.set(r, { size: -1, mtimeNs: '', cid, fresh: true })
        this.log.info('a copy the record names was not known here: checking it', { path: r })
        this.recheck(r)
      }
    }
  }

  private isDuplicate (cid: string, abs: string): boolean {
    return this.records.isDuplicatePath(cid, abs)
  }
}
