/**
 * The end of a bulk transfer (bulk-insert.ts): what is derived from the
 * roots it inserted as they were, built at once for all of them, each
 * structure in its own key order so its pages are written once:
 * 1. the root rows of the range fingerprints, in position order
 *    (fingerprints.ts `addStaged`; a root changed since it was inserted is
 *    left to the fold that took or takes its change);
 * 2. the `cid:` index, in CID order: each CID a root still holds while it
 *    is still a record joins the index as any write's does (groups.ts: two
 *    roots sharing a CID become one record);
 * 3. the waiting rows go.
 * Each step is a few transactions of `CHUNK` entries queued with the other
 * writes, so the node answers meanwhile. It runs again from the start,
 * harmlessly, after a crash before the waiting rows went (the marker
 * `idx:bulk/finish`, written with the transfer's last page, says it is due).
 */
import { prefixEnd, type KvStore, type Tx } from '../kv/index.js'
import { BULK_DERIVE_PREFIX, type Staged } from './bulk-insert.js'
import type { Fingerprints } from './fingerprints.js'
import { ROOTS, fieldKey } from './layout.js'
import type { RecordId } from './record-id.js'

/** Written with a transfer's last page, removed by its end: the end is due (after a crash too). */
export const BULK_FINISH_KEY = 'idx:bulk/finish'
/** Entries (roots or CIDs) per transaction of the end. */
const CHUNK = 20_000

/** Builds what a transfer's inserted roots wait for; `aliasAdded` registers a CID as a write does (groups.ts). */
export async function deriveBulk (kv: KvStore, fingerprints: Fingerprints, aliasAdded: (tx: Tx, rid: RecordId, cid: string) => void): Promise<number> {
  const rows = kv.range(BULK_DERIVE_PREFIX, prefixEnd(BULK_DERIVE_PREFIX))
  const staged: Staged[] = []
  for (const [, v] of rows) for (const s of JSON.parse(v) as Staged[]) staged.push(s)
  await fingerprints.addStaged(staged.map(([rid, hash, keys]) => ({ rid, hash, keys })), CHUNK)
  const pairs: Array<[string, string]> = []
  for (const [rid, , , cids] of staged) for (const c of cids) pairs.push([c, rid])
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : 1))
  for (let i = 0; i < pairs.length; i += CHUNK) {
    const chunk = pairs.slice(i, i + CHUNK)
    await kv.write(tx => {
      for (const [cid, rid] of chunk) {
        // Still a record holding the CID (a write since it arrived may have changed that: it kept the index itself).
        if (tx.get(ROOTS + rid) === undefined || tx.get(fieldKey(rid, `cids/${cid}`)) === undefined) continue
        aliasAdded(tx, rid as RecordId, cid)
      }
    })
  }
  await kv.write(tx => {
    for (const [k] of rows) tx.delete(k)
    tx.delete(BULK_FINISH_KEY)
  })
  return staged.length
}
