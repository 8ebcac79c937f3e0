/**
 * How values and nodes read on the page: key sets as chips, sizes and
 * nanosecond times in units people use (the raw value in the title), and a
 * node as its name (META_CORE_NODE_NAME, from `GET /api/mesh`) beside its
 * short id.
 */
import { useEffect, useState } from 'preact/hooks'
import { call } from '../api.js'
import { readableValue, recordTitle, setMembers, shortId } from '../format.js'
import type { MeshStatus } from '../wire.js'

export function FieldValue ({ field, value }: { field: string, value: string }) {
  const members = setMembers(value)
  if (members !== undefined) {
    return <ul class="chips" aria-label={`${field}: ${members.length} values`}>{members.map(m => <li key={m} class="chip">{m}</li>)}</ul>
  }
  const readable = readableValue(field, value)
  return readable === undefined ? <>{value}</> : <span title={value}>{readable}</span>
}

let cached: Promise<Map<string, string>> | undefined

/** Node names by peer id: this node's and its peers' (empty on a node without a mesh route, or while loading). */
export function useNodeNames (): Map<string, string> {
  const [names, setNames] = useState<Map<string, string>>(new Map())
  useEffect(() => {
    cached ??= call<MeshStatus>('GET', '/api/mesh', { quiet: true }).then((m) => {
      const out = new Map<string, string>()
      if (m.self.name != null) out.set(m.self.peerId, m.self.name)
      for (const p of m.peers) if (p.name != null) out.set(p.peerId, p.name)
      return out
    }, () => { cached = undefined; return new Map<string, string>() })
    let live = true
    void cached.then((n) => { if (live) setNames(n) })
    return () => { live = false }
  }, [])
  return names
}

/** A node: its name (when known) and its id, shortened, the whole id in the title. */
export function NodeLabel ({ id, names }: { id: string, names: ReadonlyMap<string, string> }) {
  const name = names.get(id)
  return (
    <span class="node-label" title={id}>
      {name !== undefined && <strong>{name}</strong>}{name !== undefined && ' '}
      <code>{shortId(id, name === undefined ? 10 : 6)}</code>
    </span>
  )
}

const titles = new Map<string, Promise<string | undefined>>()

/**
 * Record titles (or file names) by root, for the activity list: each
 * asked once per change seen (`key` carries the change's time, so a new
 * title shows after a rename); a deleted record has none.
 */
export function useTitles (items: ReadonlyArray<{ root: string, key: string }>): Map<string, string> {
  const [out, setOut] = useState<Map<string, string>>(new Map())
  const wanted = items.map(i => i.key).join(' ')
  useEffect(() => {
    let live = true
    void Promise.all(items.map(async ({ root, key }) => {
      let p = titles.get(key)
      if (p === undefined) {
        p = call<{ metadata: Record<string, string> }>('GET', `/api/metadata/${encodeURIComponent(root)}`, { quiet: true })
          .then(r => recordTitle(r.metadata, ''), () => undefined)
          .then(t => (t === '' ? undefined : t))
        titles.set(key, p)
      }
      return [root, await p] as const
    })).then((pairs) => {
      if (!live) return
      const next = new Map<string, string>()
      for (const [root, t] of pairs) if (t !== undefined) next.set(root, t)
      setOut(next)
    })
    return () => { live = false }
  }, [wanted])
  return out
}
