/**
 * Least-recently-used order on a plain Map: insertion order is recency
 * order, so touching an entry re-inserts it at the end and eviction walks
 * from the start. Used to bound the core's state per signer.
 */

/** Makes `key` the most recently used entry of `map`. */
export function touch<K, V> (map: Map<K, V>, key: K, value: V): void {
  map.delete(key)
  map.set(key, value)
}

/**
 * Removes the least recently used entries that `pinned` does not keep until
 * at most `max` unpinned ones are left; `onEvict` is told of each.
 */
export function evictBeyond<K, V> (map: Map<K, V>, max: number, pinned: (v: V) => boolean, onEvict: (v: V) => void = () => {}): void {
  let unpinned = 0
  for (const v of map.values()) if (!pinned(v)) unpinned++
  for (const [k, v] of map) {
    if (unpinned <= max) return
    if (pinned(v)) continue
    map.delete(k)
    onEvict(v)
    unpinned--
  }
}
