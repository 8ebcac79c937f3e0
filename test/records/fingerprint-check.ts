/**
 * Recomputes the range fingerprints from the replicated rows, independently
 * of the maintained structure, and lists where the stored rows or the tree
 * in memory disagree (empty: they hold exactly what a rebuild would). The
 * bucket rows are the store's only when it closes: see fingerprints.test.ts.
 */
import { prefixEnd } from '../../src/kv/index.js'
import type { NodeStore } from '../../src/records/index.js'
import { FP_ROOT, rootHash, rootPosition, sumHex, versionedKeys } from '../../src/records/fingerprints.js'
import { VersionMap } from '../../src/records/versions.js'

export function fingerprintErrors (s: NodeStore): string[] {
  const errors: string[] = []
  const kv = s.kv
  // Reading them folds in the roots changed since the last fold (fingerprints.ts): done before the read transaction.
  s.records.digest()
  return kv.read(() => {
    const want = new Map<string, string>()
    for (const [k, v] of kv.range('ver:', prefixEnd('ver:'))) {
      const rid = k.slice(4)
      // Of the folded map (versions.ts), whatever the row holds.
      const vm = VersionMap.parse(v)
      want.set(FP_ROOT + rootPosition(rid) + rid, `${rootHash(rid, vm.serialize(), kv.suffixes(`file:${rid}/`))} ${versionedKeys(vm)}`)
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
    // The buckets are in memory while the store is open (their rows are written when it closes).
    for (let i = 0; i < 65_536; i++) {
      const b = i.toString(16).padStart(4, '0')
      const e = buckets.get(b)
      const r = s.records.rangeFingerprint(b)
      const want = e === undefined ? { fp: '0'.repeat(32), roots: 0, keys: 0 } : { fp: sumHex(e.hashes), roots: e.hashes.length, keys: e.keys }
      if (r.fp !== want.fp || r.roots !== want.roots || r.keys !== want.keys) errors.push(`bucket ${b}: ${JSON.stringify(r)}, want ${JSON.stringify(want)}`)
    }
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
