/**
 * A root's place and hash in the range fingerprints (fingerprints.ts): its
 * position, the first 32 bits of SHA-256 of its id (8 hex), and its hash,
 * the first 128 bits of SHA-256 over its id, its version map (folded and
 * canonical: versions.ts) and its live fields' names and values in name
 * order.
 */
import { hash } from 'node:crypto'
import { FILE, VER, type Reader } from './layout.js'
import { VersionMap } from './versions.js'

/** Hex digits of a position. */
export const POSITION_DIGITS = 8

/** A root's live fields, name → value; or as two lists in the same order (a fresh root's, as its write had them). */
export type LiveFields = ReadonlyMap<string, string> | Readonly<Record<string, string>> | FieldList
export interface FieldList { names: readonly string[], values: readonly string[] }

/** The position of a root (8 hex). */
export function rootPosition (rid: string): string {
  return hash('sha256', rid, 'hex').slice(0, POSITION_DIGITS) // one-shot: a Hash object per root cost three times as much
}

/**
 * The hash of a root's replicated state: its id, its version map folded and
 * canonical (`VersionMap.serialize` of a parsed map) and its live fields, `fields` giving name → value; 32 hex.
 */
export function rootHash (rid: string, verSerialized: string, fields: LiveFields): string {
  let names: readonly string[]
  let values: readonly string[]
  if (fields instanceof Map) {
    names = [...(fields as ReadonlyMap<string, string>).keys()].sort()
    values = names.map(n => (fields as ReadonlyMap<string, string>).get(n)!)
  } else if (isFieldList(fields)) {
    // A plain sort of the names (no comparator called back) and a map back to their values.
    const at = new Map<string, number>()
    for (let i = 0; i < fields.names.length; i++) at.set(fields.names[i], i)
    names = fields.names.slice().sort()
    values = names.map(n => fields.values[at.get(n)!])
  } else {
    names = Object.keys(fields).sort()
    values = names.map(n => (fields as Record<string, string>)[n])
  }
  let s = `${rid}\n${verSerialized}`
  for (let i = 0; i < names.length; i++) {
    const n = names[i]
    const v = values[i]
    s += `\n${n.length}:${n}${v.length}:${v}`
  }
  return hash('sha256', s, 'hex').slice(0, 32)
}

function isFieldList (f: LiveFields): f is FieldList {
  return Array.isArray((f as FieldList).names) && Array.isArray((f as FieldList).values)
}

/** Versioned keys a version map holds: its fields and its root tombstone. */
export function versionedKeys (vm: VersionMap): number {
  return vm.fields.size + (vm.root === undefined ? 0 : 1)
}


/** The root row a root's stored state makes (undefined: it has no version map). */
export function describeRoot (r: Reader, rid: string): { hash: string, keys: number } | undefined {
  const ver = r.get(VER + rid)
  if (ver === undefined) return undefined
  const vm = VersionMap.parse(ver)
  // The folded form (versions.ts), as the mutation path writes it: a row stored otherwise hashes the same.
  return { hash: rootHash(rid, vm.serialize(), r.suffixes(`${FILE}${rid}/`)), keys: versionedKeys(vm) }
}
