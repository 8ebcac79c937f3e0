/**
 * A database file beside a store that a layer above keeps for itself
 * (search's index file): its own connection, in WAL mode, with the store
 * file attached so its SQL can read the kv table. Only its owner writes
 * it; the store is attached for reading (nothing here writes it), so the
 * side file's transactions never take the store's write lock.
 *
 * The kv layer opens it because it is the one module that talks to SQLite;
 * what the file holds belongs to its owner.
 */
import Database from 'better-sqlite3'
import type { SqlStatement } from './types.js'
import { WalHold } from './wal-hold.js'

export interface SideFileOptions {
  path: string
  /** The store file, attached under `as` (its `kv` table is then readable unqualified, the side file having none). */
  store: { path: string, as: string }
  /** FULL: each commit is on disk when it returns (one fsync per commit); NORMAL: at the next checkpoint. */
  synchronous: 'FULL' | 'NORMAL'
  cacheKiB: number
  /** Commits check the WAL against this many pages and checkpoint it once past them (SQLite's default: 1,000). */
  autocheckpointPages?: number
  /**
   * The store's `walHold()` (wal-hold.ts) and the reader slot its owner took
   * there for this connection (acquireReaderSlot; the owner gives it back
   * once the connection's thread is gone): while the store's WAL starts over
   * (checkpointer.ts), a transaction waits before it begins (at most
   * HOLD_WAIT_MS), so its snapshot of the store does not keep the WAL from
   * starting over; a start-over waits for the transaction running when it
   * began, with the store's writers still going on.
   */
  storeReader?: { hold: SharedArrayBuffer, slot: number }
}

/** Longest a transaction waits for the store's hold to clear (the checkpointer gives up sooner). */
const HOLD_WAIT_MS = 2000

export interface SideFile {
  prepare: (sql: string) => SqlStatement
  exec: (sql: string) => void
  /** Runs `fn` in one transaction (BEGIN DEFERRED: the write lock of the side file only). */
  transaction: <T>(fn: () => T) => T
  close: () => void
}

export function openSideFile (o: SideFileOptions): SideFile {
  const db = new Database(o.path)
  try {
    db.pragma('journal_mode = WAL')
    db.pragma(`synchronous = ${o.synchronous}`)
    db.pragma('busy_timeout = 5000')
    db.pragma('temp_store = MEMORY')
    db.pragma(`cache_size = -${o.cacheKiB}`)
    if (o.autocheckpointPages !== undefined) db.pragma(`wal_autocheckpoint = ${Math.max(0, Math.floor(o.autocheckpointPages))}`)
    db.prepare(`ATTACH DATABASE ? AS ${o.store.as}`).run(o.store.path)
  } catch (err) {
    db.close()
    throw err
  }
  const hold = o.storeReader === undefined ? undefined : WalHold.of(o.storeReader.hold)
  const slot = o.storeReader?.slot ?? -1
  return {
    prepare: sql => db.prepare(sql),
    exec: sql => { db.exec(sql) },
    transaction: fn => {
      if (hold === undefined) return db.transaction(fn).deferred()
      hold.enterRead(slot, HOLD_WAIT_MS)
      try {
        return db.transaction(fn).deferred()
      } finally {
        hold.leaveRead(slot)
      }
    },
    close: () => { db.close() }
  }
}
