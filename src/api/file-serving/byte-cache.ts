/**
 * Files this node fetched whole from peers, kept to serve again
 * (META_CORE_CACHE_PATH, off by default). Only a transfer that was checked
 * against the record's CIDs and matched is kept (stream-check.ts): the
 * cache never holds bytes that were not proven to be the content. Entries
 * are named by record id; the total stays under `maxBytes`, the least
 * recently served going first. The folder is the cache's own: what is in
 * it at start is taken as entries, anything half-written is removed.
 *
 * While it keeps a record's bytes this node is a holder of them (issue 43:
 * "a node holds bytes it fetched and serves them, and says so in holders
 * only while it keeps them"). With `holding` (the node's records and its
 * holder id), an entry's commit adds the node-local row `meta-core:cached/<rid>` and
 * this node's `holders/<id>` member (records `holdCachedCopy`), peers fetch
 * the bytes here (`openForPeer`, which the byte protocol's opener consults
 * after the library), and an entry that goes (evicted, its file removed, or
 * not there any more at start: `reconcile`) releases the member as a
 * library copy's last release does (`releaseCachedCopy`), unless the node
 * also has a library copy. The row is what keeps the two apart: the
 * watcher releasing a library copy leaves a member the cache holds, and
 * the cache never releases one a library copy holds.
 */
import fs from 'node:fs'
import { open, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from '../../common/index.js'
import type { ServableFile } from '../../mesh/index.js'
import type { Records } from '../../records/index.js'
import { openServableFile } from './local-path.js'

const TMP_SUFFIX = '.part'
/** Record ids (ULID-shaped, records/record-id.ts); nothing else is a cache entry. */
const NAME = /^[0-9A-Z]{26}$/

export interface CacheWriter {
  write: (chunk: Buffer) => Promise<void>
  /** Keeps the file (the transfer was whole and checked). */
  commit: () => Promise<void>
  /** Drops it. */
  abort: () => Promise<void>
}

/** What makes the cache's entries holder members: the node's records and its holder id (`holders/<holderId>`). */
interface CacheHolding {
  records: Pick<Records, 'holdCachedCopy' | 'releaseCachedCopy' | 'cachedCopies' | 'getDocument' | 'read'>
  holderId: string
}

export class ByteCache {
  /** Record id → size; Map order is the LRU order (oldest first). */
  private readonly entries = new Map<string, number>()
  private total = 0

  constructor (private readonly dir: string, private readonly maxBytes: number, private readonly log: Logger, private readonly holding?: CacheHolding) {
    fs.mkdirSync(dir, { recursive: true })
    const found: Array<{ name: string, size: number, atimeMs: number }> = []
    for (const name of fs.readdirSync(dir)) {
      const p = path.join(dir, name)
      if (name.endsWith(TMP_SUFFIX)) { fs.rmSync(p, { force: true }); continue }
      const st = fs.statSync(p)
      if (st.isFile() && NAME.test(name)) found.push({ name, size: st.size, atimeMs: st.atimeMs })
    }
    for (const f of found.sort((a, b) => a.atimeMs - b.atimeMs)) { this.entries.set(f.name, f.size); this.total += f.size }
  }

  /** Bytes held now. */
  get size (): number {
    return this.total
  }

  /** The cached file of record `rid`, marked as just used; undefined when not cached. */
  pathOf (rid: string): string | undefined {
    const size = this.entries.get(rid)
    if (size === undefined) return undefined
    this.entries.delete(rid)
    this.entries.set(rid, size)
    return path.join(this.dir, rid)
  }

  /** Forgets an entry whose file went (removed by hand): this node stops being a holder through it. */
  async forget (rid: string): Promise<void> {
    const size = this.entries.get(rid)
    if (size === undefined) return
    this.entries.delete(rid)
    this.total -= size
    await this.release(rid)
  }

  /**
   * Brings the records in line with the folder, once at start: a record the
   * cache said it keeps (a `meta-core:cached/` row) whose file is not here any more is
   * released; an entry without its row (the node stopped between keeping
   * the file and writing the row) gets it, and the member.
   */
  async reconcile (): Promise<void> {
    if (this.holding === undefined) return
    const said = new Set<string>(this.holding.records.cachedCopies())
    for (const rid of said) if (!this.entries.has(rid)) await this.release(rid)
    for (const rid of [...this.entries.keys()]) if (!said.has(rid)) await this.hold(rid)
  }

  /**
   * The cached bytes of `cid` for a peer (the byte protocol's serving side,
   * after the library): the entry of the record's root (or of a root of its
   * group), opened as the local route opens files, while its size is the
   * entry's and the record's. Undefined when the cache does not keep it.
   */
  async openForPeer (cid: string): Promise<ServableFile | undefined> {
    const records = this.holding?.records
    if (records === undefined) return undefined
    const doc = records.read(() => records.getDocument(cid))
    if (doc === undefined) return undefined
    const rid = [doc.rid, ...doc.members].find(r => this.entries.has(r))
    if (rid === undefined) return undefined
    const size = this.entries.get(rid)!
    const p = this.pathOf(rid)!
    const file = await openServableFile(p)
    if (file === undefined) { await this.forget(rid); return undefined }
    const recorded = doc.metadata.sizeByte
    if (file.size !== size || (recorded !== undefined && recorded !== String(size))) {
      await file.fh.close()
      return undefined
    }
    return { fh: file.fh, size: file.size, mtimeMs: file.mtimeMs, ext: path.extname(doc.metadata.filePath ?? '') }
  }

  /** A writer for record `rid`'s `size` bytes, or undefined when it cannot fit or is already kept. */
  async writer (rid: string, size: number): Promise<CacheWriter | undefined> {
    if (!NAME.test(rid) || size > this.maxBytes || this.entries.has(rid)) return undefined
    const tmp = path.join(this.dir, `${rid}.${process.pid}.${Math.random().toString(36).slice(2)}${TMP_SUFFIX}`)
    const fh = await open(tmp, 'wx')
    let closed = false
    const close = async (): Promise<void> => { if (!closed) { closed = true; await fh.close() } }
    return {
      write: async (chunk) => { await fh.write(chunk) },
      commit: async () => {
        await close()
        await this.evictFor(size)
        await rename(tmp, path.join(this.dir, rid))
        this.entries.set(rid, size)
        this.total += size
        await this.hold(rid)
      },
      abort: async () => {
        await close()
        await rm(tmp, { force: true })
      }
    }
  }

  private async evictFor (incoming: number): Promise<void> {
    for (const [rid, size] of this.entries) {
      if (this.total + incoming <= this.maxBytes) return
      this.entries.delete(rid)
      this.total -= size
      // The member first: peers stop choosing this node before its file goes (a transfer already open reads on).
      await this.release(rid)
      await rm(path.join(this.dir, rid), { force: true })
      this.log.debug('cache entry evicted', { rid, size })
    }
  }

  private async hold (rid: string): Promise<void> {
    const h = this.holding
    if (h === undefined) return
    try {
      await h.records.holdCachedCopy(rid, h.holderId)
    } catch (err) {
      // The bytes are still served to this node's clients; peers just do not learn of this copy.
      this.log.warn('could not record the cached copy as held here', { rid, err })
    }
  }

  private async release (rid: string): Promise<void> {
    const h = this.holding
    if (h === undefined) return
    try {
      await h.records.releaseCachedCopy(rid, h.holderId)
    } catch (err) {
      // Left as it is, the row is released at the next start (reconcile).
      this.log.warn('could not release the cached copy\'s holder member', { rid, err })
    }
  }
}

/** A node started without a cache: every record a previous cache said it kept is released (the cache is gone). */
export async function releaseCachedCopies (holding: CacheHolding, log: Logger): Promise<number> {
  let n = 0
  for (const rid of holding.records.cachedCopies()) {
    try {
      await holding.records.releaseCachedCopy(rid, holding.holderId)
      n++
    } catch (err) {
      log.warn('could not release a cached copy\'s holder member', { rid, err })
    }
  }
  return n
}
