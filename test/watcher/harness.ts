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
  type FileEventSource, type WatcherHandle, type WatcherInit
} from '../../src/watcher/index.js'
import { createScriptedEventSource, type ScriptedEventSource } from '../../src/watcher/testing.js'
import { tmpDir } from '../helpers/tmp.js'
import { virtualTime, type VirtualTime } from './virtual-time.js'

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
  /**
   * `virtual`: the watcher runs on a virtual clock (virtual-time.ts) that `waitEvents`,
   * `idle` and `pause` move on while they wait, so settle windows take no real time.
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
  /** Waits for `p`, moving the virtual clock on meanwhile (a scan waits for its files to settle); real time: just waits. */
  wait: <T>(p: Promise<T>, timeoutMs?: number) => Promise<T>
  /** The virtual clock and file reads every watcher of this harness runs on (`clock: 'virtual'`). */
  time: VirtualTime | undefined
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
  const time: VirtualTime | undefined = opts.clock === 'virtual' ? virtualTime() : undefined
  /** Waits for `pred` in real time, or moves the virtual clock on until it holds. */
  const until = async (pred: () => boolean, timeoutMs: number, what: string): Promise<void> => {
    if (time === undefined) return await waitFor(pred, { timeoutMs, what, intervalMs: 20 })
    if (!await time.advance(timeoutMs, pred)) throw new Error(`timed out after ${timeoutMs} virtual ms waiting for ${what}`)
  }

  const build = async (o: HarnessOptions): Promise<void> => {
    const kind = o.source ?? 'scripted'
    store = openNodeStore({ path: dbPath, nodeId: 'node-test' })
    scripted = kind === 'scripted' ? createScriptedEventSource() : undefined
    source = kind === 'real' ? createFsEventSource({ root: files }) : scripted
    const { source: _s, start: _st, logger, clock: _c, ...init } = o
    watcher = createWatcher(
      {
        records: store.records,
        ...(source !== undefined ? { eventSource: source } : {}),
        ...(logger !== undefined ? { logger } : {}),
        ...(time !== undefined ? { clock: time.clock, reads: time.reads } : {})
      },
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
      await h.wait(watcher.whenIdle({ timeoutMs }), timeoutMs)
    },
    async pause (ms) {
      if (time !== undefined) await time.advance(ms)
      // Real time on purpose: with OS events (the only harness on real time that pauses) time passing is what is tested.
      else await sleep(ms)
    },
    async wait (p, timeoutMs = 20_000) {
      if (time === undefined) return await p
      let done = false
      const out = p.finally(() => { done = true })
      out.catch(() => {}) // observed below; the clock must not stop on it
      // Nothing left to run in that time, no I/O under way, and still not done: it never will be.
      if (!await time.advance(timeoutMs, () => done)) throw new Error(`still waiting after ${timeoutMs} virtual ms, with nothing left to run`)
      return await out
    },
    time,
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

/**
 * Writes `rel` again (through the driver) and sets its mtime a second past
 * the last one: a rewrite shows whatever the file system's timestamp
 * granularity, with no wait for the clock to tick.
 */
export function rewrite (h: Harness, rel: string, data: string | Uint8Array): void {
  const last = fs.statSync(h.abs(rel)).mtimeMs
  h.fsd.write(rel, data)
  const later = new Date(last + 1_000)
  fs.utimesSync(h.abs(rel), later, later)
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
