/**
 * A small Watcher for API tests: no watching, but `registerFile` does the
 * real work (midhash the file, mint or find the record, append an `add` to
 * file:events) so POST /api/files/register can be tested end to end. The
 * real watcher lives in src/watcher.
 */
import fs from 'node:fs'
import path from 'node:path'
import { midhash256 } from '../../src/cid/index.js'
import { InvalidInputError } from '../../src/common/index.js'
import type { KvStore } from '../../src/kv/index.js'
import type { RecordStore } from '../../src/records/index.js'
import type { RegisterResult, ScanSummary, Watcher, WatcherStatus } from '../../src/watcher/types.js'

export const FILE_EVENTS = 'file:events'

export function simpleWatcher (kv: KvStore, records: RecordStore, filesPath: string): Watcher {
  const empty: ScanSummary = { fileCount: 0, added: 0, changed: 0, deleted: 0, renamed: 0 }
  return {
    async start () {},
    async stop () {},
    status (): WatcherStatus {
      return {
        filesPath, enabled: false, active: false, isScanning: false, fileCount: 0,
        progress: { phase: 'idle', filesSeen: 0, filesHashed: 0, bytesHashed: 0, mbPerSecond: 0 },
        skipped: { special: 0, outside: 0, unnamable: 0 }
      }
    },
    async scan () { return empty },
    async reset () {
      await kv.write(tx => {
        tx.clearStream(FILE_EVENTS)
        tx.appendEvent(FILE_EVENTS, { type: 'reset', path: '', watcherId: 'test', timestamp: String(Date.now()) })
      })
      return empty
    },
    async registerFile (rel: string): Promise<RegisterResult> {
      if (!rel.startsWith('plugin/')) throw new InvalidInputError('path must be under plugin/', { code: 'invalid_path' })
      const abs = path.join(filesPath, rel)
      const st = await fs.promises.stat(abs)
      if (st.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' })
      const { cid } = await midhash256(abs)
      const known = records.resolveRoot(cid)
      if (known !== undefined) return { root: known, cid, created: false, path: rel, size: st.size }
      const rid = await records.mint(`/files/${rel}`, st.size, BigInt(Math.floor(st.mtimeMs)) * 1_000_000n, { [`cids/${cid}`]: 'true' })
      await kv.write(tx => { tx.appendEvent(FILE_EVENTS, { type: 'add', path: rel, size: String(st.size), midhash256: cid, timestamp: String(Date.now()) }) })
      return { root: rid, cid, created: true, path: rel, size: st.size }
    }
  }
}
