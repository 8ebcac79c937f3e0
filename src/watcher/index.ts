/**
 * watcher: files on disk under FILES_PATH → the record lifecycle, and the
 * `file:events` stream that describes it.
 *
 * Owns: the initial scan, live changes (OS events taken as hints to re-stat,
 * never as facts), the periodic rescan that catches what the OS dropped,
 * settle-then-hash with bounded concurrency, arrival / change / move /
 * deletion applied to records with this node's `holders/<id>` member, manual
 * scan and reset, registerFile, and its per-node state rows `watch:f/<path>`.
 * It reaches storage only through the record layer (`WatcherRecords`: file
 * records, reads, and the local store for its rows and stream).
 *
 * Guarantees:
 * - A file is hashed only after its size and mtime held still for the settle
 *   window, and is re-stat'ed after hashing; a file written while being read
 *   is never recorded with that hash.
 * - Each change's record writes, its `file:events` entry and its state row
 *   are queued in one turn and commit in one store transaction (record
 *   writes and the record layer's local store share its group commit); an event is
 *   published only if its record change committed (see lifecycle-writer.ts
 *   for the one narrow case where they may commit apart and how the next
 *   scan repairs it).
 * - A record is deleted only when no copy of its content is left on this node
 *   (neither its duplicate rows nor the paths the state knows name one) and
 *   no other node holds it; a deleted `filePath` is replaced by a copy, with
 *   that copy's size and mtime.
 * - A vanished file's record is not released while a file of the same size
 *   (of any size, for a path known only from the records after a crash)
 *   found meanwhile still waits to be hashed: a move, or a copy made as the
 *   first file goes (`cp` then `rm`, or both while the node was down), is one
 *   `rename` and keeps the record with every field people gave it.
 * - After a restart, files whose size and mtime match their state row cause
 *   no hashing and no event; files removed while down are announced `delete`,
 *   moved ones `rename`.
 * - Its time comes from one injected `Clock` (common/clock.ts, `systemClock`
 *   by default) and the stats and hashes its decisions rest on from injected
 *   `FileReads` (`systemFileReads`), so tests drive its windows on a virtual
 *   clock and may hold a hash back.
 * - Hidden paths (a segment starting with `.`) are not part of the library.
 *   Neither are FIFOs, sockets and devices (never opened: a FIFO's open
 *   blocks), symlinks whose target lies outside the library (never read),
 *   symlinked folders (not followed) and names that are not valid UTF-8;
 *   each of those is logged once and counted in the status. A symlink to a
 *   file inside the library is that file at another path.
 *   Unreadable files and folders are logged and skipped, never fatal, and an
 *   unreadable folder never makes its files count as deleted; a missing
 *   FILES_PATH fails the scan instead of deleting the library's records.
 * - Full-content CIDs (full-hasher.ts, `fullHash`): once a file is recorded,
 *   its sha2-256 and IPFS CIDs are computed in the background, one file at a
 *   time at a bounded read rate, behind the watcher's own reads, and added
 *   to its record's `cids/` key-set; never from bytes that changed while
 *   read, never for content whose record carries them already; what a
 *   restart interrupted is found again from the records.
 * - `stop()` is idempotent, aborts hashing and waits for writes in flight.
 */
export { createWatcher } from './watcher.js'
export { FILE_EVENTS } from './types.js'
export type {
  Watcher, WatcherHandle, WatcherComponents, WatcherInit, WatcherStatus, WatcherProgress, FullHashStatus, ScanSummary, RegisterResult
} from './types.js'
export { InvalidPathError, FileNotFoundError, FilesPathUnavailableError } from './errors.js'
export { createFsEventSource } from './fs-event-source.js'
export { systemFileReads } from './file-reads.js'
export type { FileReads } from './file-reads.js'
export type { FsEventSourceOptions } from './fs-event-source.js'
export { isHiddenPath } from './file-event-source.js'
export type { FileEventSource, HintHandler, EventSourceStatus } from './file-event-source.js'
export { WATCH_STATE_PREFIX, FILES_MOUNT, recordedFile } from './file-state.js'
export { checkRegisterPath, REGISTER_FOLDER } from './register-path.js'
