/**
 * Versions of a record's keys, kept beside the record (`ver:<rid>`), never
 * under `file:`, so the `file:` range stays exactly the records.
 *
 * A version is `<hlc16><origin>`: the fixed-width clock first, so plain string
 * order is the (hlc, origin) order that last-writer-wins compares. A field
 * with a version and no `file:` row is a tombstone. The root tombstone `r`
 * shadows every key with a version at or below it; versions at or below it
 * are dropped, which keeps the map small and changes nothing a merge decides.
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
    return new VersionMap(o.r, fields)
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

  /** True when a write at `v` to `field` wins over what is held. */
  wins (field: string, v: Version): boolean {
    const cur = this.effective(field)
    return cur === undefined || v > cur
  }

  /** Raises the root tombstone and drops the key versions it shadows. */
  setRoot (v: Version): void {
    this.root = v
    for (const [n, fv] of this.fields) if (fv <= v) this.fields.delete(n)
  }
}
