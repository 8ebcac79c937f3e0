/**
 * A watcher over a real temp library folder and a real store file, fed by
 * either the OS (`real`) or a scripted event source whose hints the file
 * driver emits itself (`scripted`). Lifecycle tests run against both.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterEach } from 'vitest'
import { midhash256 } from '../../src/cid/index.js'
import { sleep, waitFor, type Logger } from '../../src/common/index.js'
import { openNodeStore, type NodeStore } from '../../src/records/index.js'
import {
  FILE_EVENTS, createFsEventSource, createWatcher,
  type FileEventSource, type WatcherHandle, type WatcherInit, type WatcherRuntime
} from '../../src/watcher/index.js'
import { createScriptedEventSource, type ScriptedEventSource } from '../../src/watcher/testing.js'
import { tmpDir } from '../helpers/tmp.js'
import { virtualRuntime, type VirtualRuntime } from './virtual-runtime.js'

export type SourceKind = 'real' | 'scripted'

/** File operations; the scripted driver also emits the hints the OS would. */
export interface FsDriver {
  write: (rel: string, data: string | Uint8Array) => void
  append: (rel: string, data: string | Uint8Array) => void
  remove: (rel: string) => void
  rename: (from: string, to: string) => void
  mkdir: (rel: string) => void
}

export interface HarnessOptions extends Partial<WatcherInit> {
  source?: SourceKind | 'none'
  /** Start the watcher at once (default true). */
  start?: boolean
  logger?: Logger
  /** The watcher's clocks, timers, stat and hash (default: the system's). */
  runtime?: WatcherRuntime
  /**
   * `virtual`: the watcher runs on a virtual clock (test/watcher/virtual-runtime.ts) that
   * `waitEvents` and `idle` move on while they wait, so settle windows take no real time.
   */
  clock?: 'real' | 'virtual'
}

export interface Harness {
  root: string
  files: string
  dbPath: string
  store: NodeStore
  watcher: WatcherHandle
  source: FileEventSource | undefined
  fsd: FsDriver
  abs: (rel: string) => string
  /** file:events entries (fields, `type` included) in order. */
  events: () => Array<Record<string, string>>
  /** Waits until `pred` holds over the events. */
  waitEvents: (pred: (evs: Array<Record<string, string>>) => boolean, what: string, timeoutMs?: number) => Promise<Array<Record<string, string>>>
  idle: (timeoutMs?: number) => Promise<void>
  /** Lets `ms` pass: real time, or the virtual clock's (timers due meanwhile run). */
  pause: (ms: number) => Promise<void>
  /** Stops the watcher and closes the store, keeping the folders: a node going down. */
  shutdown: () => Promise<void>
  /** Opens the store again and starts a new watcher over the same folders: the node coming back. */
  reopen: (opts?: HarnessOptions) => Promise<void>
  close: () => Promise<void>
}

export const SETTLE_MS = 200

export async function midhashOf (abs: string): Promise<string> {
  return (await midhash256(abs)).cid
}

export async function openHarness (opts: HarnessOptions = {}): Promise<Harness> {
  const t = tmpDir('mc-')
  const files = path.join(t.dir, 'files')
  const dbPath = path.join(t.dir, 'db', 'meta-core.db')
  const abs = (rel: string): string => path.join(files, rel)
  let store!: NodeStore
  let watcher!: WatcherHandle
  let source: FileEventSource | undefined
  let scripted: ScriptedEventSource | undefined
  let closed = false
  // One clock for every watcher the harness opens (a restart keeps its time).
  const clock: VirtualRuntime | undefined = opts.clock === 'virtual' ? virtualRuntime() : undefined
  /** Waits for `pred` in real time, or moves the virtual clock on until it holds. */
  const until = async (pred: () => boolean, timeoutMs: number, what: string): Promise<void> => {
    if (clock === undefined) return await waitFor(pred, { timeoutMs, what, intervalMs: 20 })
    if (!await clock.advance(timeoutMs, { stepMs: 20, until: pred })) throw new Error(`timed out after ${timeoutMs} virtual ms waiting for ${what}`)
  }

  const build = async (o: HarnessOptions): Promise<void> => {
    const kind = o.source ?? 'scripted'
    store = openNodeStore({ path: dbPath, nodeId: 'node-test' })
    scripted = kind === 'scripted' ? createScriptedEventSource() : undefined
    source = kind === 'real' ? createFsEventSource({ root: files }) : scripted
    const { source: _s, start: _st, logger, clock: _c, ...rest } = o
    const { runtime = clock, ...init } = rest
    watcher = createWatcher(
      { records: store.records, ...(source !== undefined ? { eventSource: source } : {}), ...(logger !== undefined ? { logger } : {}),
        ...(runtime !== undefined ? { runtime } : {}) },
      { filesPath: files, settleMs: SETTLE_MS, rescanIntervalMs: 3_600_000, enabled: kind !== 'none', ...init }
    )
    if (o.start !== false) await watcher.start()
  }

  const emit = (rel: string): void => { scripted?.emit(rel) }
  const fsd: FsDriver = {
    write (rel, data) { fs.mkdirSync(path.dirname(abs(rel)), { recursive: true }); fs.writeFileSync(abs(rel), data); emit(rel) },
    append (rel, data) { fs.appendFileSync(abs(rel), data); emit(rel) },
    remove (rel) { fs.rmSync(abs(rel), { recursive: true, force: true }); emit(rel) },
    rename (from, to) { fs.mkdirSync(path.dirname(abs(to)), { recursive: true }); fs.renameSync(abs(from), abs(to)); emit(from); emit(to) },
    mkdir (rel) { fs.mkdirSync(abs(rel), { recursive: true }); emit(rel) }
  }
  fs.mkdirSync(files, { recursive: true })
  await build(opts)

  const events = (): Array<Record<string, string>> => store.kv.readStream(FILE_EVENTS, undefined, 1_000_000).map(e => e.fields)
  const h: Harness = {
    root: t.dir,
    files,
    dbPath,
    get store () { return store },
    get watcher () { return watcher },
    get source () { return source },
    fsd,
    abs,
    events,
    async waitEvents (pred, what, timeoutMs = 10_000) {
      await until(() => pred(events()), timeoutMs, what)
      return events()
    },
    async idle (timeoutMs = 20_000) {
      let done = false
      const idle = watcher.whenIdle({ timeoutMs }).finally(() => { done = true })
      if (clock !== undefined) await clock.advance(timeoutMs, { stepMs: 20, until: () => done })
      await idle
    },
    async pause (ms) {
      if (clock !== undefined) await clock.advance(ms, { stepMs: 20 })
      else await sleep(ms)
    },
    async shutdown () {
      await watcher.stop()
      store.close()
    },
    async reopen (o = opts) { await build(o) },
    async close () {
      if (closed) return
      closed = true
      try {
        await watcher.stop()
      } finally {
        if (!store.kv.isClosed) store.close()
        t.cleanup()
      }
    }
  }
  return h
}

/** Writes `rel` (through the driver), waits for its add and gives its record a title a person would; returns its midhash. */
export async function recordWithTitle (h: Harness, rel: string, data: Uint8Array, title = 'Kept'): Promise<string> {
  const before = h.events().length
  h.fsd.write(rel, data)
  await h.waitEvents(e => e.length === before + 1, `the add of ${rel}`)
  const cid = await midhashOf(h.abs(rel))
  await h.store.records.mergeFlat(cid, { title })
  return cid
}

/** The events a test cares about, without timestamps. */
export function shapes (evs: Array<Record<string, string>>): Array<Record<string, string>> {
  return evs.map(({ timestamp: _t, ...rest }) => rest)
}

/**
 * A test file's `harness()`: each one opened is idle when returned and is
 * closed after the test that opened it (call at the top level of the file).
 */
export function harnessPerTest (defaults: HarnessOptions = {}): (opts?: HarnessOptions) => Promise<Harness> {
  const open: Harness[] = []
  afterEach(async () => { while (open.length > 0) await open.pop()!.close() })
  return async (opts = {}) => {
    const h = await openHarness({ ...defaults, ...opts })
    open.push(h)
    await h.idle()
    return h
  }
}
