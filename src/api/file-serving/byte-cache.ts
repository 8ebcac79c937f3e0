/**
 * Files this node fetched whole from peers, kept to serve again
 * (META_CORE_CACHE_PATH, off by default). Only a transfer that was checked
 * against the record's CIDs and matched is kept (stream-check.ts): the
 * cache never holds bytes that were not proven to be the content. Entries
 * are named by record id; the total stays under `maxBytes`, the least
 * recently served going first. The folder is the cache's own: what is in
 * it at start is taken as entries, anything half-written is removed.
 *
 * The cache serves this node's own clients; it does not make this node a
 * holder for its peers (no `holders/` member), so the mesh's holder set
 * keeps meaning "has it in its library".
 */
import fs from 'node:fs'
import { open, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from '../../common/index.js'

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

export class ByteCache {
  /** Record id → size; Map order is the LRU order (oldest first). */
  private readonly entries = new Map<string, number>()
  private total = 0

  constructor (private readonly dir: string, private readonly maxBytes: number, private readonly log: Logger) {
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

  /** Forgets an entry whose file went (removed by hand). */
  forget (rid: string): void {
    const size = this.entries.get(rid)
    if (size === undefined) return
    this.entries.delete(rid)
    this.total -= size
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
        this.evictFor(size)
        await rename(tmp, path.join(this.dir, rid))
        this.entries.set(rid, size)
        this.total += size
      },
      abort: async () => {
        await close()
        await rm(tmp, { force: true })
      }
    }
  }

  private evictFor (incoming: number): void {
    for (const [rid, size] of this.entries) {
      if (this.total + incoming <= this.maxBytes) return
      this.entries.delete(rid)
      this.total -= size
      fs.rmSync(path.join(this.dir, rid), { force: true })
      this.log.debug('cache entry evicted', { rid, size })
    }
  }
}
