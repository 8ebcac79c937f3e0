/**
 * File bytes this node moves to and from its peers (GET /api/mesh/transfers):
 * per peer, what it served from its library and fetched for its own
 * clients, and the transfers running now. Shown in the node panel's mesh
 * part, each peer by the name it announced (from GET /api/mesh, as the
 * peers table), its id short beside it; polled like the rest of it.
 */
import { useEffect, useState } from 'preact/hooks'
import { call } from '../api.js'
import { formatBytes, shortId } from '../format.js'
import { useInterval } from './common.js'

const POLL_MS = 3000

/** GET /api/mesh/transfers, one row per peer. */
interface PeerTransfers {
  peerId: string
  bytesServed: number
  bytesFetched: number
  busyRefusals: number
  servingNow: number
  fetchingNow: number
}

/** `names`: each peer's announced name, by peer id (null: not heard). */
export function Transfers ({ names }: { names: ReadonlyMap<string, string | null | undefined> }) {
  const [rows, setRows] = useState<PeerTransfers[] | undefined>(undefined)
  const refresh = (): void => {
    call<{ peers: PeerTransfers[] }>('GET', '/api/mesh/transfers', { quiet: true }).then(r => { setRows(r.peers) }, () => { setRows(undefined) })
  }
  useEffect(refresh, [])
  useInterval(refresh, POLL_MS)
  if (rows === undefined) return null
  return (
    <section aria-labelledby="transfers-title">
      <h3 id="transfers-title">File transfers</h3>
      {rows.length === 0
        ? <p class="muted">No file bytes moved to or from a peer since this node started.</p>
        : (
          <div class="table-wrap">
            <table class="transfers">
              <thead><tr><th scope="col">Peer</th><th scope="col" class="num">Sent to it</th><th scope="col" class="num">Received from it</th><th
                scope="col">Now</th></tr></thead>
              <tbody>
                {rows.map(r => (
                  <tr key={r.peerId} data-peer={r.peerId}>
                    <td data-testid="transfers-peer">{names.get(r.peerId) ?? <span class="muted">not heard</span>} <code class="muted"
                      title={r.peerId}>{shortId(r.peerId, 8)}</code></td>
                    <td class="num">{formatBytes(r.bytesServed)}</td>
                    <td class="num">{formatBytes(r.bytesFetched)}</td>
                    <td data-testid="transfers-now">{r.servingNow + r.fetchingNow === 0 ? <span class="muted">idle</span> : `${r.servingNow} sending, ${r.fetchingNow} receiving`}{r.busyRefusals > 0 && <span class="muted"> ({r.busyRefusals} refused busy)</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          )}
    </section>
  )
}
