/**
 * Two guards run before a store file is opened for writing.
 *
 * Foreign files: a non-empty SQLite database without meta-core's `kv` table
 * belongs to another application. Opening it as a store would add tables,
 * switch it to WAL and write a schema version into it, so it is refused,
 * read only through a read-only connection, and left byte for byte as it
 * was.
 *
 * One process per store: two nodes on one file each believe the watcher
 * rows describe their own folder, and one's scan deletes the other's
 * records. The owner holds an exclusive SQLite lock on a small side file,
 * `<store>.lock` (locking_mode=EXCLUSIVE, taken by a write and never
 * released while the connection is open). The lock is a POSIX record lock
 * held by the kernel for the process: a crash, SIGKILL included, releases
 * it, so it can never be left stuck. A lock on the store file itself would
 * not do: SQLite's exclusive locking mode on the store would shut out the
 * WAL checkpointer's second connection. The side file costs one open and
 * one write at start (about a millisecond) and nothing on any read or
 * write. Who owns the store (pid, host, start time, and the HTTP address
 * once it listens) is written beside it in `<store>.owner`, for the message
 * a second process prints; that file is only information, the lock decides.
 */
import fs from 'node:fs'
import os from 'node:os'
import Database from 'better-sqlite3'
import { ForeignStoreError, StorageError, StoreInUseError, type StoreOwner } from './errors.js'

/** Tables named in a refusal: enough to recognise the application. */
const MAX_TABLES_NAMED = 5

/**
 * Refuses a file that exists, is not empty and is not a meta-core store:
 * not SQLite at all, or SQLite with tables and no `kv (k, v)` table. Reads
 * through a read-only connection; a missing or empty file is a new store.
 */
export function refuseForeignFile (file: string): void {
  let size: number
  try {
    size = fs.statSync(file).size
  } catch {
    return // nothing there yet: a new store
  }
  if (size === 0) return
  let db: Database.Database
  try {
    db = new Database(file, { readonly: true, fileMustExist: true })
  } catch (err) {
    throw new StorageError(`cannot open store file ${file}: ${(err as Error).message}`, { cause: err })
  }
  try {
    let tables: string[]
    try {
      tables = (db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[])
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_NOTADB') throw new ForeignStoreError(file, 'it is not a SQLite database')
      throw new StorageError(`cannot read store file ${file}: ${(err as Error).message}`, { cause: err })
    }
    if (tables.length === 0) return
    if (!tables.includes('kv')) {
      const named = tables.slice(0, MAX_TABLES_NAMED).join(', ') + (tables.length > MAX_TABLES_NAMED ? `, … (${tables.length} tables)` : '')
      throw new ForeignStoreError(file, `it holds tables (${named}) and no kv table`)
    }
    const columns = (db.prepare("SELECT name FROM pragma_table_info('kv') ORDER BY cid").pluck().all() as string[])
    if (columns.join(',') !== 'k,v') throw new ForeignStoreError(file, `its kv table has columns (${columns.join(', ')}), not (k, v)`)
  } finally {
    db.close()
  }
}

/** The exclusive hold on a store (see the module comment). */
export class StoreLock {
  private readonly db: Database.Database
  private readonly ownerFile: string
  private readonly owner: StoreOwner
  private released = false

  private constructor (db: Database.Database, ownerFile: string, owner: StoreOwner) {
    this.db = db
    this.ownerFile = ownerFile
    this.owner = owner
  }

  /** Takes the lock on `storeFile` or throws StoreInUseError naming the owner. */
  static acquire (storeFile: string): StoreLock {
    const lockFile = `${storeFile}.lock`
    const ownerFile = `${storeFile}.owner`
    let db: Database.Database
    try {
      // timeout 0: a held lock is an answer, not something to wait for.
      db = new Database(lockFile, { timeout: 0 })
    } catch (err) {
      throw new StorageError(`cannot open the store's lock file ${lockFile}: ${(err as Error).message}`, { cause: err })
    }
    try {
      // Nothing in this file matters but the lock: no journal, no fsync. (These read the file: BUSY when it is held.)
      db.pragma('journal_mode = OFF')
      db.pragma('synchronous = OFF')
      db.pragma('locking_mode = EXCLUSIVE')
      // The first write takes the EXCLUSIVE lock; in this locking mode it is kept until the connection closes.
      db.exec('BEGIN EXCLUSIVE')
      db.exec('CREATE TABLE IF NOT EXISTS held (pid INTEGER, at INTEGER)')
      db.exec('DELETE FROM held')
      db.prepare('INSERT INTO held VALUES (?, ?)').run(process.pid, Date.now())
      db.exec('COMMIT')
    } catch (err) {
      db.close()
      if ((err as { code?: string }).code === 'SQLITE_BUSY') throw new StoreInUseError(storeFile, readOwner(ownerFile))
      throw new StorageError(`cannot lock store file ${storeFile}: ${(err as Error).message}`, { cause: err })
    }
    const lock = new StoreLock(db, ownerFile, { pid: process.pid, host: os.hostname(), since: new Date().toISOString() })
    lock.writeOwner()
    return lock
  }

  /** Adds what a second process should be told (the HTTP address once the node listens). */
  announce (info: { url?: string }): void {
    if (this.released) return
    if (info.url !== undefined) this.owner.url = info.url
    this.writeOwner()
  }

  /** Releases the lock and removes the owner record. Idempotent. */
  release (): void {
    if (this.released) return
    this.released = true
    try {
      fs.rmSync(this.ownerFile, { force: true })
    } finally {
      this.db.close()
    }
  }

  private writeOwner (): void {
    // Written whole then renamed, so a reader never sees half a record. Only information: failure is not fatal.
    const tmp = `${this.ownerFile}.${process.pid}.tmp`
    try {
      fs.writeFileSync(tmp, JSON.stringify(this.owner) + '\n')
      fs.renameSync(tmp, this.ownerFile)
    } catch {
      fs.rmSync(tmp, { force: true })
    }
  }
}

function readOwner (ownerFile: string): StoreOwner | undefined {
  try {
    const o = JSON.parse(fs.readFileSync(ownerFile, 'utf8')) as Partial<StoreOwner>
    if (typeof o.pid !== 'number') return undefined
    return { pid: o.pid, host: String(o.host ?? ''), since: String(o.since ?? ''), ...(typeof o.url === 'string' ? { url: o.url } : {}) }
  } catch {
    return undefined // the owner crashed before writing it, or it was removed by hand: the lock alone answers
  }
}
