import type { ServerResponse } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger, waitFor, withTimeout } from '../../src/common/index.js'
import { compareEventIds, parseEventId } from '../../src/kv/index.js'
import { FILE_EVENTS, META_EVENTS, type RecordId } from '../../src/records/index.js'
import { startApi, type ApiHarness, type HarnessOptions } from '../helpers/api-harness.js'
import { ManualClock } from '../helpers/manual-clock.js'
import { openSse, type SseClient, type SseEvent } from '../helpers/sse-client.js'
import { createWatcher } from '../../src/watcher/index.js'

let h: ApiHarness | undefined
const clients: SseClient[] = []
afterEach(async () => {
  for (const c of clients.splice(0)) c.close()
  await h?.close()
  h = undefined
})

async function setup (opts: HarnessOptions = {}): Promise<{ h: ApiHarness, url: string }> {
  h = await startApi(opts)
  return { h, url: await h.listen() }
}

async function sse (url: string, headers: Record<string, string> = {}, pauseFirstMs?: number): Promise<SseClient> {
  const c = await openSse(url, headers, { pauseFirstMs })
  clients.push(c)
  return c
}

function dataOf (e: SseEvent): Record<string, string> {
  return JSON.parse(e.data) as Record<string, string>
}

/**
 * A reader that stops reading, at the network's edge: after `after` writes
 * the response says it must drain, and the drain never comes (what a
 * socket does once the kernel's buffers are full, which on loopback takes
 * more megabytes than a test should write). What was written is kept.
 */
function neverDrains (r: ServerResponse, after: number, written: string[]): void {
  const write = r.write.bind(r) as (chunk: unknown) => boolean
  const full = (): boolean => written.length >= after
  r.write = ((chunk: unknown) => { written.push(String(chunk)); write(chunk); return !full() }) as ServerResponse['write']
  Object.defineProperty(r, 'writableNeedDrain', { get: full })
  const emit = r.emit.bind(r) as (event: string | symbol, ...args: unknown[]) => boolean
  r.emit = ((event: string | symbol, ...args: unknown[]) => (event === 'drain' && full() ? false : emit(event, ...args))) as ServerResponse['emit']
}

/** Ids of the retained meta:events entries after `after`, as the store holds them. */
function storedIdsAfter (hh: ApiHarness, after: string): string[] {
  return hh.store.kv.readStream(META_EVENTS, parseEventId(after), 1_000_000).map(e => e.id)
}

async function setTitles (hh: ApiHarness, n: number, from = 0): Promise<RecordId[]> {
  return await Promise.all(Array.from({ length: n }, async (_, i) => await hh.store.records.mint(`/files/${from + i}.mkv`, 1, 1n)))
}

describe('SSE /api/events/meta', () => {
  it('sends the SSE headers and, without Last-Event-ID, only entries committed after connecting', async () => {
    const { h, url } = await setup()
    await setTitles(h, 2)
    const c = await sse(`${url}/api/events/meta`)
    expect(c.status).toBe(200)
    expect(c.headers['content-type']).toBe('text/event-stream')
    expect(c.headers['cache-control']).toBe('no-cache')
    expect(c.headers['x-accel-buffering']).toBe('no')
    const rid = await h.store.records.mint('/files/new.mkv', 7, 8n)
    await c.waitForEvents(3)
    expect(c.events.map(e => e.event)).toEqual(['set', 'set', 'set'])
    expect(c.events.map(e => dataOf(e).key).sort()).toEqual([`file:${rid}/filePath`, `file:${rid}/mtimeNano`, `file:${rid}/sizeByte`])
    for (const e of c.events) {
      expect(e.id).toMatch(/^\d+-\d+$/)
      expect(Object.keys(dataOf(e)).sort()).toEqual(['key', 'ts']) // the type became the event name
      expect(dataOf(e).ts).toBe(e.id!.split('-')[0]) // the time of the change: its entry id's milliseconds
    }
    expect(c.events.map(e => e.id)).toEqual(storedIdsAfter(h, '0-0').slice(-3))
  })

  it('resumes strictly after the Last-Event-ID cursor', async () => {
    const { h, url } = await setup()
    await setTitles(h, 3)
    const all = storedIdsAfter(h, '0-0')
    const cursor = all[4]
    const c = await sse(`${url}/api/events/meta`, { 'last-event-id': cursor })
    await c.waitForEvents(all.length - 5)
    const [later] = await setTitles(h, 1, 10)
    await h.store.records.mergeFlat(later, { title: 'later' })
    await c.waitForEvents(all.length - 5 + 4)
    expect(c.events.map(e => e.id)).toEqual(storedIdsAfter(h, cursor))
    expect(c.events.some(e => e.event === 'gap')).toBe(false)
  })

  it('sends one gap event (no id) when retention trimmed past the cursor, then everything retained', async () => {
    const { h, url } = await setup({ streamRetention: 10, trimEvery: 1 })
    await setTitles(h, 2)
    const firstEver = h.store.kv.streamFirst(META_EVENTS)!
    for (let i = 0; i < 10; i++) await h.store.records.mergeFlat((await setTitles(h, 1, 100 + i))[0], { title: `t${i}` })
    const oldest = h.store.kv.streamFirst(META_EVENTS)!
    expect(compareEventIds(parseEventId(oldest), parseEventId(firstEver))).toBeGreaterThan(0)
    const c = await sse(`${url}/api/events/meta`, { 'last-event-id': firstEver })
    await c.waitForEvents(11)
    expect(c.events[0]).toEqual({ event: 'gap', data: JSON.stringify({ requested: firstEver, resumeFrom: oldest, reason: 'retention' }) })
    expect(c.events.slice(1).map(e => e.id)).toEqual(storedIdsAfter(h, '0-0'))
    expect(c.events.slice(1)[0].id).toBe(oldest)
  })

  it('shows DeleteRoot as one del per key (the root tombstone row stays internal), live and when resuming, with ts from the id', async () => {
    const { h, url } = await setup()
    const [rid] = await setTitles(h, 1)
    await h.store.records.mergeFlat(rid, { title: 'x' })
    const cursor = h.store.kv.streamHead(META_EVENTS)!
    const live = await sse(`${url}/api/events/meta`)
    await h.store.records.deleteRoot(rid)
    const [after] = await setTitles(h, 1, 1)
    const stored = h.store.records.readChangeLog(cursor, 100)
    expect(stored.map(e => e.key)).toContain(`file:${rid}`) // the log has the root tombstone row
    const shown = stored.filter(e => e.key !== `file:${rid}`)
    expect(shown).toHaveLength(4 + 3)
    const resumed = await sse(`${url}/api/events/meta`, { 'last-event-id': cursor })
    for (const c of [live, resumed]) {
      await c.waitForEvents(shown.length)
      expect(c.events.map(e => e.id)).toEqual(shown.map(e => e.id))
      expect(c.events.map(e => `${e.event} ${dataOf(e).key}`)).toEqual(shown.map(e => `${e.op} ${e.key}`))
      expect(c.events.slice(0, 4).every(e => e.event === 'del')).toBe(true)
      expect(dataOf(c.events[4]).key.startsWith(`file:${after}/`)).toBe(true)
      for (const e of c.events) expect(dataOf(e).ts).toBe(e.id!.split('-')[0])
    }
  })

  it('treats a malformed cursor as 0: a gap, then every retained entry', async () => {
    const { h, url } = await setup()
    await setTitles(h, 1)
    const c = await sse(`${url}/api/events/meta`, { 'last-event-id': 'not-a-cursor' })
    await c.waitForEvents(4)
    expect(c.events[0].event).toBe('gap')
    expect(dataOf(c.events[0]).requested).toBe('not-a-cursor')
    expect(c.events.slice(1).map(e => e.id)).toEqual(storedIdsAfter(h, '0-0'))
  })

  it('0-0 streams a snapshot of every record key then the live tail: nothing missed, nothing twice, under concurrent writes', async () => {
    const { h, url } = await setup()
    // Long field names make the snapshot large enough (~12 MB) to outgrow the socket buffers, so the
    // server must wait for the paused reader mid-snapshot while the writes below commit.
    const long = (tag: string): string => `${tag}/${'x'.repeat(500)}`
    const rids = await Promise.all(Array.from({ length: 4000 }, async (_, i) =>
      await h.store.records.mint(`/files/${i}.mkv`, 1, 1n, { [long('a')]: 'v', [long('b')]: 'v', [long('c')]: 'v' })))
    rids.sort()
    const before = new Set(h.store.kv.keys('file:', 'file;'))
    const c = await sse(`${url}/api/events/meta`, { 'last-event-id': '0-0' }, 1500)
    // Concurrent writes, newest records first (the snapshot reaches them last): new keys, changed keys, deleted keys.
    for (let i = 0; i < 300; i++) {
      const rid = rids[rids.length - 1 - i]
      if (i % 3 === 0) await h.store.records.deleteProperty(rid, long('a'))
      else await h.store.records.mergeFlat(rid, { zz: String(i), title: `t${i}` })
    }
    const head = h.store.kv.streamHead(META_EVENTS)!
    await waitFor(() => c.events.length > 0 && c.events[c.events.length - 1].id === head, { timeoutMs: 60_000, what: 'the live tail to reach the stream head' })

    const snapEnd = c.events.findIndex(e => e.id !== undefined)
    const snapshot = c.events.slice(0, snapEnd + 1)
    const tail = c.events.slice(snapEnd + 1)
    const H = snapshot[snapshot.length - 1].id!
    // The snapshot: one set per key, only the last one carrying an id (the head captured first).
    expect(snapshot.every(e => e.event === 'set')).toBe(true)
    // A snapshot reports state, not changes: every set carries the time the snapshot began (docs/api.md).
    expect(new Set(snapshot.map(e => dataOf(e).ts)).size).toBe(1)
    expect(tail.every(e => dataOf(e).ts === e.id!.split('-')[0])).toBe(true)
    const snapKeys = snapshot.map(e => dataOf(e).key)
    expect(new Set(snapKeys).size).toBe(snapKeys.length)
    expect(snapKeys.length).toBeGreaterThanOrEqual(before.size - 100) // keys deleted before the snapshot reached them are absent
    // Writes really ran while the snapshot was streaming: some keys they created are in it.
    expect(snapKeys.some(k => k.endsWith('/zz'))).toBe(true)
    // The tail is exactly the stream after H: no entry missed, none twice, in order.
    expect(tail.map(e => e.id)).toEqual(storedIdsAfter(h, H))
    // Replaying snapshot + tail gives exactly the store's keys.
    const state = new Set(snapKeys)
    for (const e of tail) {
      if (e.event === 'set') state.add(dataOf(e).key)
      else if (e.event === 'del') state.delete(dataOf(e).key)
    }
    expect([...state].sort()).toEqual(h.store.kv.keys('file:', 'file;'))
  }, 120_000)

  it('falls back to reading the store when a live reader is slow, without losing or repeating entries', async () => {
    const lines: string[] = []
    const { h, url } = await setup({ logger: createLogger({ level: 'debug', write: l => { lines.push(l) } }) })
    const c = await sse(`${url}/api/events/meta`, {}, 1000)
    // ~9 MB of events while the reader is paused: more than the socket buffers hold, so the server meets backpressure.
    await Promise.all(Array.from({ length: 4000 }, async (_, i) =>
      await h.store.records.mint(`/files/${i}.mkv`, 1, 1n, { [`a/${'y'.repeat(500)}`]: 'v', [`b/${'y'.repeat(500)}`]: 'v' })))
    const head = h.store.kv.streamHead(META_EVENTS)!
    await waitFor(() => c.events.length > 0 && c.events[c.events.length - 1].id === head, { timeoutMs: 60_000, what: 'all entries' })
    expect(c.events.map(e => e.id)).toEqual(storedIdsAfter(h, '0-0'))
    expect(c.events).toHaveLength(20_000)
    // The live connection did meet backpressure and read the rest from the store.
    expect(lines.filter(l => l.includes('event stream reader is slow')).length).toBeGreaterThan(0)
  }, 120_000)

  it('forgets a subscriber that leaves, even in the middle of a snapshot', async () => {
    const { h, url } = await setup()
    await setTitles(h, 300) // about 900 keys: a snapshot of several pages
    const streams = async (): Promise<number> => (await h.app.inject({ url: '/status' })).json().eventStreams as number
    // The snapshot's reader stops reading after its first pages (the response then waits for a drain that never comes).
    const written: string[] = []
    let res: ServerResponse | undefined
    h.app.server.prependListener('request', (req, r: ServerResponse) => {
      if (req.headers['last-event-id'] !== '0-0') return
      res = r
      neverDrains(r, 300, written)
    })
    const c = await sse(`${url}/api/events/meta`, { 'last-event-id': '0-0' })
    const live = await sse(`${url}/api/events/meta`)
    await waitFor(async () => await streams() === 2, { timeoutMs: 5000, what: 'two open streams' })
    // Mid-snapshot: the server waits for the reader, its pages so far read, and not the last one (the only event with an id).
    await waitFor(() => res?.writableNeedDrain === true && c.events.length === written.length, { timeoutMs: 5000, what: 'the snapshot to wait for its reader' })
    const sent = written.length
    expect(sent).toBeGreaterThanOrEqual(300)
    expect(sent).toBeLessThan(h.store.kv.keys('file:', 'file;').length)
    expect(c.events.every(e => e.event === 'set' && e.id === undefined)).toBe(true)
    c.close()
    await waitFor(async () => await streams() === 1, { timeoutMs: 5000, what: 'the snapshot reader to be forgotten' })
    // Its snapshot ended there: nothing more of it was written.
    expect(written).toHaveLength(sent)
    // The one still connected keeps receiving.
    await setTitles(h, 1, 5000)
    await live.waitForEvents(3)
  }, 60_000)

  it('sends :keep-alive after the configured silence, on the API\'s clock', async () => {
    const clock = new ManualClock()
    const { url } = await setup({ clock })
    const c = await sse(`${url}/api/events/meta`)
    await clock.advance(29_999)
    expect(clock.pending).toBe(1) // the heartbeat, not yet due
    await clock.advance(1) // 30 s of silence by default (docs/design/original.md#sse)
    await waitFor(() => c.comments.length === 1, { timeoutMs: 5000, what: 'the first heartbeat' })
    await clock.advance(30_000)
    await waitFor(() => c.comments.length === 2, { timeoutMs: 5000, what: 'the second heartbeat' })
    expect(c.comments).toEqual(['keep-alive', 'keep-alive'])
    expect(c.events).toEqual([])
  })

  it('ends open streams when the server closes, and close returns', async () => {
    const { h, url } = await setup()
    await setTitles(h, 2)
    const cs = [
      await sse(`${url}/api/events/meta`),
      await sse(`${url}/api/events/meta`, { 'last-event-id': '0' }),
      await sse(`${url}/api/events/files`, { 'last-event-id': '0-0' })
    ]
    await waitFor(() => cs[1].events.length >= 6, { timeoutMs: 5000, what: 'the snapshot' })
    await withTimeout(h.app.close(), 5000, 'app.close with open SSE streams')
    await waitFor(() => cs.every(x => x.ended), { timeoutMs: 5000, what: 'every stream to end' })
  })
})

describe('SSE /api/events/files', () => {
  it('0-0 replays the retained file events (after a gap event); no header gives only new ones', async () => {
    const { h, url } = await setup()
    const w = createWatcher({ records: h.store.records }, { filesPath: h.filesPath, enabled: false, watcherId: 'test' })
    await h.store.kv.write(tx => {
      tx.appendEvent(FILE_EVENTS, { type: 'add', path: 'watch/a.mkv', size: '10', timestamp: '1' })
      tx.appendEvent(FILE_EVENTS, { type: 'delete', path: 'watch/b.mkv', timestamp: '2' })
    })
    const replay = await sse(`${url}/api/events/files`, { 'last-event-id': '0-0' })
    const live = await sse(`${url}/api/events/files`)
    await replay.waitForEvents(3)
    expect(replay.events[0].event).toBe('gap')
    expect(replay.events.slice(1).map(e => [e.event, e.data])).toEqual([
      ['add', JSON.stringify({ path: 'watch/a.mkv', size: '10', timestamp: '1' })],
      ['delete', JSON.stringify({ path: 'watch/b.mkv', timestamp: '2' })]
    ])
    await w.reset()
    await live.waitForEvents(1)
    await replay.waitForEvents(4)
    expect(live.events.map(e => e.event)).toEqual(['reset'])
    expect(replay.events[3].event).toBe('reset')
    expect(dataOf(live.events[0])).toMatchObject({ path: '', watcherId: 'test' })
  })
})
