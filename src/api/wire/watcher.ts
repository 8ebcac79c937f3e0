/**
 * The file watcher's status as `/api/watchers` and `/status` show it. These
 * describe src/watcher's WatcherStatus (src/watcher/types.ts), which keeps
 * its own interfaces; test/api/wire-types.test.ts holds the two equal.
 *
 * The watcher's answers stay open (`additionalProperties: true`, at every
 * level), as they always were: a field the watcher adds reaches clients
 * before it is described here. Rates, times left and limits are numbers
 * (fractions, or Infinity written as null), counts integers.
 */
import { StringEnum, StringList, Type, type Static, type TProperties } from './kit.js'

/** An object with these fields and any others (the watcher's answers). */
const Open = <P extends TProperties>(properties: P, options: { description?: string } = {}) =>
  Type.Object(properties, { ...options, additionalProperties: true })

export const WatcherProgress = Open({
  phase: StringEnum(['idle', 'initial-scan', 'scan', 'reset']),
  filesSeen: Type.Integer({ description: 'files the scan\'s walk found' }),
  filesHashed: Type.Integer({ description: 'files the scan hashed (new or changed)' }),
  bytesHashed: Type.Integer({ description: 'bytes midhash256 read of them (at most 1 MiB a file)' }),
  fileBytesHashed: Type.Integer({ description: 'their sizes' }),
  sinceScan: Open({ filesHashed: Type.Integer(), fileBytesHashed: Type.Integer() }, { description: 'files hashed since the scan ended (live changes), and their sizes' }),
  mbPerSecond: Type.Number({ description: 'midhash bytes read per second during the scan' }),
  filesPending: Type.Optional(Type.Integer({ description: 'files found changed and not yet hashed (settling, queued or being hashed)' })),
  startedAt: Type.Optional(Type.String()),
  etaSeconds: Type.Optional(Type.Number({ description: 'seconds left in the current scan, when known' }))
}, { description: 'the current scan\'s figures, or the last one\'s while idle' })
export type WatcherProgress = Static<typeof WatcherProgress>

export const FullHashStatus = Open({
  algorithms: StringList,
  state: StringEnum(['off', 'idle', 'checking', 'hashing', 'paused']),
  filesHashed: Type.Integer({ description: 'files read whole and their CIDs recorded' }),
  bytesHashed: Type.Integer(),
  filesKnown: Type.Integer({ description: 'files not read: their record already carried the CIDs' }),
  filesChanged: Type.Integer({ description: 'reads thrown away because the file changed meanwhile' }),
  filesFailed: Type.Integer({ description: 'files that could not be read' }),
  filesPending: Type.Integer({ description: 'files waiting, the one being read included' }),
  bytesPending: Type.Integer(),
  mbPerSecond: Type.Number({ description: 'read rate while reading (pauses left out), MB/s' }),
  bytesPerSecondLimit: Type.Number(),
  etaSeconds: Type.Optional(Type.Number()),
  current: Type.Optional(Open({ path: Type.String(), size: Type.Integer(), bytesRead: Type.Integer() }, { description: 'the file being read' }))
}, { description: 'the background full hash: files and bytes done, what waits, rate and time left' })
export type FullHashStatus = Static<typeof FullHashStatus>

const statusFields = {
  filesPath: Type.String(),
  enabled: Type.Boolean(),
  active: Type.Boolean(),
  isScanning: Type.Boolean(),
  fileCount: Type.Integer(),
  progress: WatcherProgress,
  skipped: Open({ special: Type.Integer(), outside: Type.Integer(), unnamable: Type.Integer() }, {
    description: 'entries the last full scan skipped: FIFOs, sockets and devices, symlinks leading outside the library, names that are not valid UTF-8'
  }),
  fullHash: FullHashStatus,
  lastScan: Type.Optional(Type.String()),
  lastError: Type.Optional(Open({ message: Type.String(), at: Type.String() }, { description: 'the last scan failed: why and when; absent once a scan succeeds again' })),
  events: Type.Optional(Open({ kind: Type.String(), watching: Type.Integer(), degraded: Type.Optional(Type.String()) }, { description: 'the live event source; absent when the watcher is disabled' }))
}

/** `/status`'s `watcher`: the watcher's status as it gives it. */
export const WatcherStatus = Open({ id: Type.Optional(Type.String()), ...statusFields })
export type WatcherStatus = Static<typeof WatcherStatus>

/** One watcher in `/api/watchers`: its status, with its id and folder under the original's names. */
export const WatcherView = Open({ id: Type.String(), path: Type.String({ description: 'FILES_PATH' }), ...statusFields })
export type WatcherView = Static<typeof WatcherView>

export const WatcherList = Open({ watchers: Type.Array(WatcherView), count: Type.Integer() })
export type WatcherList = Static<typeof WatcherList>

export const WaitQuery = Type.Object({ wait: Type.Optional(StringEnum(['true', 'false', '1', '0'])) }, { additionalProperties: false })

export const WatcherIdParams = Type.Object({ id: Type.String({ maxLength: 200 }) })

/** The id in `/api/watchers/{id}/scan` and `/reset` (any id: one that is not the node's watcher is a 404). */
export const WatcherPathId = Type.Object({ id: Type.String() })

const ScanSummary = Open({ fileCount: Type.Integer(), added: Type.Integer(), changed: Type.Integer(), deleted: Type.Integer(), renamed: Type.Integer() })

/** A scan or reset started (or, with ?wait=true, done with its summary). */
export const ScanReply = Open({
  status: Type.String(),
  message: Type.String(),
  watcherId: Type.Optional(Type.String({ description: 'reset only' })),
  fileCount: Type.Integer(),
  totalFiles: Type.Integer(),
  summary: Type.Optional(ScanSummary)
})
export type ScanReply = Static<typeof ScanReply>
