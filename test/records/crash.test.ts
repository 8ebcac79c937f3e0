import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { prefixEnd } from '../../src/kv/index.js'
import { VersionMap, openNodeStore } from '../../src/records/index.js'
import { prng } from '../helpers/prng.js'
import { tmpDir } from '../helpers/tmp.js'
import { groupInvariantErrors } from './invariants.js'
import { fingerprintErrors } from './fingerprint-check.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const CHILD = path.join(here, 'crash-child.ts')
const KILLS = Number(process.env.META_CORE_CRASH_KILLS ?? 20)

/** Runs the writer until it has acknowledged some writes, then SIGKILLs it after a random delay; returns the acks. */
async function runAndKill (db: string, delayMs: number): Promise<Map<string, number>> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, db], { stdio: ['ignore', 'pipe', 'pipe'] })
  const acks = new Map<string, number>()
  let buf = ''
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const exited = new Promise<void>(resolve => child.on('exit', () => { resolve() }))
  await new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`writer acknowledged nothing within 20 s: ${stderr}`)) }, 20_000)
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString()
      let nl: number
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        const m = /^ack (\S+) (\d+)$/.exec(line)
        if (m !== null) {
          acks.set(m[1], Number(m[2]))
          if (acks.size === 1) {
            clearTimeout(deadline)
            // A timer on purpose: the kill must land at a random moment of the writing, not at an event of it.
            setTimeout(() => { child.kill('SIGKILL'); resolve() }, delayMs)
          }
        }
      }
    })
  })
  await exited
  return acks
}

describe('crash safety', () => {
  const t = tmpDir()
  afterAll(() => { t.cleanup() })

  it(`keeps every acknowledged write and no half-written record across ${KILLS} SIGKILLs`, async () => {
    const db = path.join(t.dir, 'crash.db')
    const rand = prng(7)
    const acked = new Map<string, number>()
    for (let round = 0; round < KILLS; round++) {
      const acks = await runAndKill(db, 20 + Math.floor(rand() * 400))
      for (const [rid, i] of acks) acked.set(rid, i)
      const s = openNodeStore({ path: db, nodeId: 'checker' })
      try {
        expect(s.kv.integrityCheck()).toBe('ok')
        for (const [rid, i] of acked) {
          const flat = s.records.getFlat(rid)
          expect(flat, `acknowledged record ${rid} lost in round ${round}`).toBeDefined()
          expect(flat!.seq).toBe(String(i))
        }
        // Whatever was committed, acknowledged or not, is whole: every field, its version, its index entry.
        const roots = s.kv.keys('idx:roots/', prefixEnd('idx:roots/')).map(k => k.slice(10))
        for (const rid of roots) {
          const flat = s.records.getFlat(rid)!
          expect(Object.keys(flat)).toHaveLength(Number(flat.fieldCount))
          expect(VersionMap.parse(s.kv.get(`ver:${rid}`)).fields.size).toBe(Number(flat.fieldCount))
        }
        expect(s.records.countRecords()).toBe(roots.length)
        expect(groupInvariantErrors(s)).toEqual([])
        // The range fingerprints, folded in after their writes and after a crash from the change log: exactly the rows that survived.
        expect(fingerprintErrors(s)).toEqual([])
        // Every record key is published, and nothing else is under file:.
        const fileKeys = s.kv.count('file:', prefixEnd('file:'))
        expect(fileKeys).toBe(roots.length * 12)
      } finally {
        s.close()
      }
    }
    expect(acked.size).toBeGreaterThan(KILLS)
  }, 300_000)
})
