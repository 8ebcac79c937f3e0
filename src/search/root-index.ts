/**
 * Reads over `idx:roots/` (every live root): canonical roots in id order for
 * paging and listing, and the root-id substring test of the free text.
 */
import type { KvStore, SqlStatement } from '../kv/index.js'
import { GRP_PREFIX, ROOTS_HI, ROOTS_LO } from './search-schema.js'

const RID_AT = ROOTS_LO.length + 1
// A root is canonical unless its idx:grp entry names another root.
const CANONICAL = `NOT EXISTS (SELECT 1 FROM kv g WHERE g.k = '${GRP_PREFIX}' || substr(r.k, ${RID_AT}) AND g.v <> substr(r.k, ${RID_AT}))`

export class RootIndex {
  private readonly st: Record<'page' | 'all' | 'containing', SqlStatement>

  constructor (kv: KvStore) {
    const p = (sql: string): SqlStatement => kv.prepare(sql).pluck()
    this.st = {
      page: p(`SELECT substr(r.k, ${RID_AT}) FROM kv r WHERE r.k > ? AND r.k < '${ROOTS_HI}' AND ${CANONICAL} ORDER BY r.k LIMIT ? OFFSET ?`),
      all: p(`SELECT substr(r.k, ${RID_AT}) FROM kv r WHERE r.k >= '${ROOTS_LO}' AND r.k < '${ROOTS_HI}' AND ${CANONICAL}`),
      // LIKE is ASCII case-insensitive, and about twice as fast here as lower()+instr().
      containing: p(`SELECT substr(k, ${RID_AT}) FROM kv WHERE k >= '${ROOTS_LO}' AND k < '${ROOTS_HI}' AND k LIKE ?`)
    }
  }

  /** Canonical roots in id order, after `after` (exclusive), skipping `offset`. */
  canonicalPage (after: string | undefined, offset: number, limit: number): string[] {
    return this.st.page.all(`${ROOTS_LO}${after ?? ''}`, limit, offset) as string[]
  }

  allCanonical (): string[] {
    return this.st.all.all() as string[]
  }

  /** Live roots (group members included) whose lower-cased id contains `fragment` (root-id letters only: no LIKE wildcards). */
  containing (fragment: string): string[] {
    return this.st.containing.all(`${ROOTS_LO}%${fragment}%`) as string[]
  }
}
