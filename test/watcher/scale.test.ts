/**
 * Many files: the initial scan of 10 000 small files, and the progress it
 * reports while it runs. META_CORE_LARGE=1 adds 100 000.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/common/index.js'
import type { WatcherProgress } from '../../src/watcher/index.js'
import { openHarness, type Harness } from './harness.js'

const open: Harness[] = []
afterEach(async () => { while (open.length > 0) await open.pop()!.close() })

/** Files spread over folders of 100, mtime an hour ago (a library at rest), content unique per file. */
function makeFiles (root: string, n: number): number {
  const old = new Date(Date.now() - 3_600_000)
  let bytes = 0
  for (let i = 0; i < n; i++) {
    const dir = path.join(root, `d${Math.floor(i / 100)}`)
    if (i % 100 === 0) fs.mkdirSync(dir, { recursive: true })
    const f = path.join(dir, `f${i}.txt`)
    const body = `file number ${i} `.repeat(1 + (i % 7))
    fs.writeFileSync(f, body)
    fs.utimesSync(f, old, old)
    bytes += body.length
  }
  return bytes
}

async function initialScan (n: number, timeoutMs: number): Promise<{ h: Harness, seconds: number, bytes: number, samples: WatcherProgress[],
  lines: string[] }> {
  const lines: string[] = []
  const samples: WatcherProgress[] = []
  let watcher: Harness['watcher'] | undefined
  // What GET /api/watchers shows, read each time the scan logs its progress.
  const write = (l: string): void => {
    lines.push(l)
    if (l.includes('scan progress') && watcher !== undefined) samples.push(watcher.status().progress)
  }
  const h = await openHarness({ source: 'real', start: false, progressIntervalMs: 100, logger: createLogger({ level: 'info', write }) })
  open.push(h)
  watcher = h.watcher
  const bytes = makeFiles(h.files, n)
  const t0 = performance.now()
  await h.watcher.start()
  await h.idle(timeoutMs)
  return { h, seconds: (performance.now() - t0) / 1000, bytes, samples, lines }
}

describe('initial scan at scale', () => {
  it('10 000 small files: one record and one add each, with progress figures along the way', async () => {
    const n = 10_000
    const { h, seconds, bytes, samples, lines } = await initialScan(n, 120_000)
    expect(h.store.records.countRecords()).toBe(n)
    const evs = h.events()
    expect(evs).toHaveLength(n)
    expect(new Set(evs.map(e => e.path)).size).toBe(n)
    expect(evs.every(e => e.type === 'add')).toBe(true)
    const st = h.watcher.status()
    expect(st).toMatchObject({ fileCount: n, isScanning: false })
    expect(st.progress).toMatchObject({ phase: 'idle', filesSeen: n, filesHashed: n, bytesHashed: bytes })
    expect(st.progress.mbPerSecond).toBeGreaterThan(0)
    // While it ran, GET /api/watchers would have shown the scan's figures growing, and the log said the same.
    const during = samples.filter(p => p.phase === 'initial-scan')
    expect(during.length).toBeGreaterThan(0)
    expect(during.some(p => p.filesSeen > 0)).toBe(true)
    expect(lines.some(l => l.includes('scan progress') && l.includes('filesHashed=') && l.includes('mbPerSecond='))).toBe(true)
    expect(lines.some(l => l.includes('scan finished') && l.includes(`added=${n}`))).toBe(true)
    console.log(`initial scan of ${n} small files: ${seconds.toFixed(1)} s (${Math.round(n / seconds)} files/s)`)
  }, 180_000)

  it.runIf(process.env.META_CORE_LARGE === '1')('100 000 small files', async () => {
    const n = 100_000
    const { h, seconds } = await initialScan(n, 1_200_000)
    expect(h.store.records.countRecords()).toBe(n)
    expect(h.watcher.status().fileCount).toBe(n)
    console.log(`initial scan of ${n} small files: ${seconds.toFixed(1)} s (${Math.round(n / seconds)} files/s)`)
  }, 1_800_000)
})
