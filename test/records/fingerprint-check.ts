/**
 * Recomputes the range fingerprints from the replicated rows, independently
 * of the maintained structure, and lists where the stored rows or the tree
 * in memory disagree (empty: they hold exactly what a rebuild would).
 */
import { prefixEnd } from '../../src/kv/index.js'
import type { NodeStore } from '../../src/records/index.js'
import { FP_BUCKET, FP_ROOT, rootHash, rootPosition, sumHex, versionedKeys } from '../../src/records/fingerprints.js'
import { VersionMap } from '../../src/records/versions.js'

export function fingerprintErrors (s: NodeStore): string[] {
  const errors: string[] = []
  const kv = s.kv
  return kv.read(() => {
    const want = new Map<string, string>()
    for (const [k, v] of kv.range('ver:', prefixEnd('ver:'))) {
      const rid = k.slice(4)
      want.set(FP_ROOT + rootPosition(rid) + rid, `${rootHash(rid, v, kv.suffixes(`file:${rid}/`))} ${versionedKeys(VersionMap.parse(v))}`)
    }
    const have = new Map(kv.range(FP_ROOT, prefixEnd(FP_ROOT)))
    for (const [k, v] of want) if (have.get(k) !== v) errors.push(`root row ${k}: ${have.get(k) ?? 'missing'}, want ${v}`)
    for (const k of have.keys()) if (!want.has(k)) errors.push(`root row ${k} for no root`)
    const buckets = new Map<string, { hashes: string[], keys: number }>()
    for (const [k, v] of want) {
      const b = k.slice(FP_ROOT.length, FP_ROOT.length + 4)
      const e = buckets.get(b) ?? { hashes: [], keys: 0 }
      const [h, n] = v.split(' ')
      e.hashes.push(h)
      e.keys += Number(n)
      buckets.set(b, e)
    }
    const haveB = new Map(kv.range(FP_BUCKET, prefixEnd(FP_BUCKET)))
    for (const [b, e] of buckets) {
      const v = `${sumHex(e.hashes)} ${e.hashes.length} ${e.keys}`
      if (haveB.get(FP_BUCKET + b) !== v) errors.push(`bucket ${b}: ${haveB.get(FP_BUCKET + b) ?? 'missing'}, want ${v}`)
    }
    for (const k of haveB.keys()) if (!buckets.has(k.slice(FP_BUCKET.length))) errors.push(`bucket row ${k} for no root`)
    const all = [...want.values()].map(v => v.split(' ')[0])
    const total = s.records.rangeFingerprint('')
    const keys = [...want.values()].reduce((n, v) => n + Number(v.split(' ')[1]), 0)
    if (total.fp !== sumHex(all) || total.roots !== want.size || total.keys !== keys) errors.push(`tree root ${JSON.stringify(total)}, want ${sumHex(all)} ${want.size} ${keys}`)
    for (const p of ['0', 'a', '3f', 'c0d', 'ffff', '12345']) {
      const rows = [...want].filter(([k]) => k.startsWith(FP_ROOT + p))
      const r = s.records.rangeFingerprint(p)
      if (r.fp !== sumHex(rows.map(([, v]) => v.split(' ')[0])) || r.roots !== rows.length) errors.push(`range ${p}: ${JSON.stringify(r)}`)
    }
    return errors
  })
}
