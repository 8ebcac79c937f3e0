/**
 * The raw size of a store's replicated range: the `file:` rows' keys and
 * values (what a peer must receive at least), and the `ver:` rows beside
 * them (the versions that travel with them), in UTF-8 bytes.
 */
import { prefixEnd, type KvStore } from '../../src/kv/index.js'

export function rawRange (kv: KvStore): { fileBytes: number, verBytes: number, keys: number } {
  let fileBytes = 0
  let verBytes = 0
  let keys = 0
  for (const [k, v] of kv.iterate('file:', prefixEnd('file:'))) { fileBytes += Buffer.byteLength(k) + Buffer.byteLength(v); keys++ }
  for (const [k, v] of kv.iterate('ver:', prefixEnd('ver:'))) verBytes += Buffer.byteLength(k) + Buffer.byteLength(v)
  return { fileBytes, verBytes, keys }
}
