/**
 * Versions of a record's keys, kept beside the record (`ver:<rid>`), never
 * under `file:`, so the `file:` range stays exactly the records.
 *
 * A version is `<hlc16><origin>`: the fixed-width clock first, so plain string
 * order is the (hlc, origin) order that last-writer-wins compares. A field
 * with a version and no `file:` row is a tombstone. The root tombstone `r`
 * shadows every key with a version at or below it.
 *
 * Equal versions are one write, so honest writers give them one value; a
 * member that signs two values with one version (a bug, or a lie) must not
 * leave replicas different, so a tie is broken by what the key holds
 * (`tieWins`): a tombstone above any value, and between two values the
 * greater UTF-8 bytes. Every node decides a tie the same way, whatever
 * arrived first.
 *
 * Folding: the key versions a root tombstone shadows are dropped, so a
 * deleted record is one root tombstone for ever, and a field's tombstone
 * lives as long as its record. A map is folded as it is read (`parse`), so
 * whatever a row holds, everything computed from it (the root's hash, what
 * peers are sent, what a merge compares) sees the folded form.
 *
 * On disk the map is grouped by version (`{"r":…,"g":{"<version>":[fields…]}}`):
 * one write stamps all its fields with one version, so a record written in one
 * go stores its version once.
 */
import type { HlcString } from './hlc.js'

export type Version = string

export function makeVersion (hlc: HlcString, origin: string): Version {
  return hlc + origin
}

export function versionHlc (v: Version): HlcString {
  return v.slice(0, 16)
}

export function versionOrigin (v: Version): string {
  return v.slice(16)
}

/**
 * At equal versions, whether a key holding `incoming` (null: a tombstone)
 * takes it over `held`: a tombstone wins over every value, and between two
 * values the greater UTF-8 bytes win (as cr-sqlite breaks its ties).
 */
export function tieWins (incoming: string | null, held: string | null): boolean {
  if (incoming === held) return false
  if (incoming === null) return true
  if (held === null) return false
  return Buffer.compare(Buffer.from(incoming), Buffer.from(held)) > 0
}

export class VersionMap {
  /** Root tombstone: every key at or below it is deleted. */
  root: Version | undefined
  readonly fields: Map<string, Version>

  constructor (root?: Version, fields?: Map<string, Version>) {
    this.root = root
    this.fields = fields ?? new Map()
  }

  static parse (s: string | undefined): VersionMap {
    if (s === undefined) return new VersionMap()
    const o = JSON.parse(s) as { r?: string, g?: Record<string, string[]> }
    const fields = new Map<string, Version>()
    if (o.g !== undefined) {
      for (const [v, names] of Object.entries(o.g)) for (const n of names) fields.set(n, v)
    }
    const vm = new VersionMap(o.r, fields)
    // Folded as read: versions a root tombstone shadows mean nothing (a row written unfolded reads as if it were).
    if (vm.root !== undefined) vm.setRoot(vm.root)
    return vm
  }

  /** Canonical form (versions and names sorted), so replicas holding the same versions hold the same bytes. */
  serialize (): string {
    // Most maps hold one version (a record written in one go): its names, sorted, are the whole map.
    let only: Version | undefined
    let single = true
    for (const v of this.fields.values()) {
      if (only === undefined) only = v
      else if (v !== only) { single = false; break }
    }
    if (single && only !== undefined) {
      const g = { [only]: [...this.fields.keys()].sort() }
      return JSON.stringify(this.root === undefined ? { g } : { r: this.root, g })
    }
    const byVersion = new Map<string, string[]>()
    for (const [n, v] of this.fields) {
      const names = byVersion.get(v)
      if (names === undefined) byVersion.set(v, [n])
      else names.push(n)
    }
    const g: Record<string, string[]> = {}
    for (const v of [...byVersion.keys()].sort()) g[v] = byVersion.get(v)!.sort()
    return JSON.stringify(this.root === undefined ? { g } : { r: this.root, g })
  }

  get isEmpty (): boolean {
    return this.root === undefined && this.fields.size === 0
  }

  /** The version a key currently has, counting the root tombstone. */
  effective (field: string): Version | undefined {
    const v = this.fields.get(field)
    if (v === undefined) return this.root
    return this.root !== undefined && this.root > v ? this.root : v
  }

  /**
   * True when `value` (null: a tombstone) at version `v` wins over what
   * `field` holds: a newer version, or at an equal one the winner of the
   * tie (`tieWins`). `held` reads the key's live value (undefined: none),
   * asked only at a tie. A root tombstone at an equal version is a
   * tombstone: nothing wins over it there.
   */
  beats (field: string, v: Version, value: string | null, held: () => string | undefined): boolean {
    const own = this.fields.get(field)
    const cur = own === undefined || (this.root !== undefined && this.root > own) ? this.root : own
    if (cur === undefined) return true
    if (v !== cur) return v > cur
    return cur === own && tieWins(value, held() ?? null)
  }

  /** Raises the root tombstone and drops the key versions it shadows (folding). */
  setRoot (v: Version): void {
    this.root = v
    for (const [n, fv] of this.fields) if (fv <= v) this.fields.delete(n)
  }
}
