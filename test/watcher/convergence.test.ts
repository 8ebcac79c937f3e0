/**
 * Random file operations on a few paths sharing a few contents (writes,
 * copies, deletes, moves, scans in between), with hints dropped, delayed and
 * reordered: after two rescans, every file on disk is in exactly one record
 * (as its filePath or a duplicate) and no record names a path that is gone.
 * Seeded, on a virtual clock (the delays between operations and of hints are
 * virtual); WATCHER_FUZZ_SEEDS runs more seeds (default 3).
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import type { ScriptedEventSource } from '../../src/watcher/testing.js'
import { pick, prng } from '../helpers/prng.js'
import { harnessPerTest, midhashOf } from './harness.js'

const harness = harnessPerTest({ source: 'scripted', settleMs: 100, clock: 'virtual' })

const PATHS = ['watch/s2/f2.bin', 'watch/copy/dup.bin', 'a/x.bin', 'a/w.bin', 'd/e/v.bin']
const CONTENTS = [Buffer.alloc(4097, 0x41), Buffer.alloc(4097, 0x42), Buffer.alloc(300, 0x43)]
const SEEDS = Number(process.env.WATCHER_FUZZ_SEEDS ?? 3)

function listFiles (root: string, dir = ''): string[] {
  const out: string[] = []
  for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = dir === '' ? e.name : `${dir}/${e.name}`
    if (e.isDirectory()) out.push(...listFiles(root, rel))
    else out.push(rel)
  }
  return out
}

describe('watcher convergence under random operations and unreliable hints', () => {
  for (let seed = 1; seed <= SEEDS; seed++) {
    it(`seed ${seed}`, async () => {
      const rand = prng(seed)
      const h = await harness()
      const source = h.source as ScriptedEventSource
      const clock = h.time!.clock
      const log: string[] = []
      const scans: Array<Promise<unknown>> = []
      const hint = (rel: string): void => {
        if (rand() < 0.1) return // dropped: only a scan finds it
        clock.schedule(Math.floor(rand() * 300), () => { source.emit(rel) }) // delayed, so reordered too
      }
      const place = (rel: string): void => { fs.mkdirSync(path.dirname(h.abs(rel)), { recursive: true }) }
      for (let step = 0; step < 25; step++) {
        const op = rand()
        const p = pick(rand, PATHS)
        const q = pick(rand, PATHS)
        const exists = fs.existsSync(h.abs(p))
        if (op < 0.35) {
          const c = Math.floor(rand() * CONTENTS.length)
          place(p)
          fs.writeFileSync(h.abs(p), CONTENTS[c])
          hint(p)
          log.push(`write ${p} ${c}`)
        } else if (op < 0.6 && exists && p !== q) {
          place(q)
          fs.copyFileSync(h.abs(p), h.abs(q))
          hint(q)
          log.push(`copy ${p} ${q}`)
        } else if (op < 0.8 && exists) {
          fs.rmSync(h.abs(p))
          hint(p)
          log.push(`rm ${p}`)
        } else if (op < 0.9 && exists && p !== q) {
          place(q)
          fs.renameSync(h.abs(p), h.abs(q))
          hint(p)
          hint(q)
          log.push(`mv ${p} ${q}`)
        } else if (op >= 0.9) {
          scans.push(h.watcher.scan())
          log.push('scan')
        }
        await h.pause(Math.floor(rand() * 250))
      }
      await h.pause(300) // the last delayed hints
      await h.wait(Promise.all(scans), 60_000)
      for (let i = 0; i < 2; i++) {
        await h.idle(60_000)
        await h.wait(h.watcher.scan(), 60_000)
      }
      await h.idle(60_000)

      const want = new Map<string, string[]>()
      for (const rel of listFiles(h.files).sort()) {
        const cid = await midhashOf(h.abs(rel))
        want.set(cid, [...(want.get(cid) ?? []), `/files/${rel}`])
      }
      const got = new Map<string, string[]>()
      for (const cid of want.keys()) {
        const doc = h.store.records.getDocument(cid)
        got.set(cid, doc === undefined ? [] : [doc.metadata.filePath, ...doc.duplicates].filter((x): x is string => x !== undefined).sort())
      }
      expect({ records: h.store.records.countRecords(), paths: Object.fromEntries(got) }, log.join('\n'))
        .toEqual({ records: want.size, paths: Object.fromEntries(want) })
    }, 120_000)
  }
})
