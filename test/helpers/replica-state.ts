/**
 * A store's replicated state read straight from its rows, and the state a
 * set of stores must reach once merged, computed here independently of the
 * record layer's merge: last-writer-wins by version, at an equal version a
 * tombstone above any value and then the greater UTF-8 bytes, a root
 * tombstone shadowing every key at or below it (folded: shadowed keys are
 * not part of the state).
 */
import { prefixEnd } from '../../src/kv/index.js'
import type { NodeStore } from '../../src/records/index.js'

export interface KeyState { v: string, value: string | null }
export interface RootState { root: string | undefined, fields: Map<string, KeyState> }
export type ReplicaState = Map<string, RootState>

/** The version map as stored, unfolded: `{"r": root, "g": {version: [fields…]}}`. */
function parseVer (raw: string): { root: string | undefined, fields: Map<string, string> } {
  const o = JSON.parse(raw) as { r?: string, g?: Record<string, string[]> }
  const fields = new Map<string, string>()
  for (const [v, names] of Object.entries(o.g ?? {})) for (const n of names) fields.set(n, v)
  return { root: o.r, fields }
}

/** Every root's state in `s`, folded. */
export function replicaState (s: NodeStore): ReplicaState {
  const out: ReplicaState = new Map()
  s.kv.read(() => {
    for (const [k, raw] of s.kv.range('ver:', prefixEnd('ver:'))) {
      const rid = k.slice(4)
      const vm = parseVer(raw)
      const fields = new Map<string, KeyState>()
      for (const [f, v] of vm.fields) {
        if (vm.root !== undefined && v <= vm.root) continue
        fields.set(f, { v, value: s.kv.get(`file:${rid}/${f}`) ?? null })
      }
      out.set(rid, { root: vm.root, fields })
    }
  })
  return out
}

/** True when `a` wins over `b`. */
export function beats (a: KeyState, b: KeyState): boolean {
  if (a.v !== b.v) return a.v > b.v
  if (a.value === b.value) return false
  if (a.value === null) return true
  if (b.value === null) return false
  return Buffer.compare(Buffer.from(a.value), Buffer.from(b.value)) > 0
}

/** The state the merge of `states` must reach. */
export function merged (states: readonly ReplicaState[]): ReplicaState {
  const out: ReplicaState = new Map()
  for (const st of states) {
    for (const [rid, r] of st) {
      const m = out.get(rid) ?? { root: undefined, fields: new Map<string, KeyState>() }
      if (r.root !== undefined && (m.root === undefined || r.root > m.root)) m.root = r.root
      for (const [f, k] of r.fields) {
        const had = m.fields.get(f)
        if (had === undefined || beats(k, had)) m.fields.set(f, k)
      }
      out.set(rid, m)
    }
  }
  for (const m of out.values()) {
    for (const [f, k] of m.fields) if (m.root !== undefined && k.v <= m.root) m.fields.delete(f)
  }
  return out
}

/** Where `have` differs from `want` (empty: equal), at most `max` lines. */
export function stateDiff (have: ReplicaState, want: ReplicaState, max = 10): string[] {
  const out: string[] = []
  const show = (r: RootState | undefined): string => r === undefined ? 'nothing' : JSON.stringify({ r: r.root, f: [...r.fields].sort() })
  for (const rid of new Set([...have.keys(), ...want.keys()])) {
    const a = have.get(rid)
    const b = want.get(rid)
    if (show(a) !== show(b)) out.push(`${rid}: ${show(a)}, want ${show(b)}`)
    if (out.length >= max) break
  }
  return out
}
