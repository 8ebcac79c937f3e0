/**
 * One record: its fields as a nested outline (editable), its CIDs with the
 * canonical one marked, holders (by name, with a link that plays the file
 * through this node), duplicates, the version of each field, a
 * preview or download of the bytes, and the raw JSON. It follows the `meta`
 * stream: a change made anywhere (another tab, the watcher, a peer) shows
 * here without a reload.
 */
import { useCallback, useEffect, useState } from 'preact/hooks'
import { ApiFailure, call } from '../api.js'
import { formatBytes, formatTime, recordTitle, shortId } from '../format.js'
import { useRootChanges } from '../live.js'
import type { FileInfo, RecordView, Status } from '../wire.js'
import { CopyButton, ErrorNote, useLoad } from './common.js'
import { AddCid, AddField, FieldTree } from './record-edit.js'
import { NodeLabel, useNodeNames } from './labels.js'

export function RecordPage ({ addr }: { addr: string }) {
  const rec = useLoad(addr, async (signal, quiet) => await call<RecordView>('GET', `/api/records/${encodeURIComponent(addr)}`, { signal, quiet }))
  const reload = useCallback(() => { rec.reload() }, [rec.reload])
  useRootChanges(rec.data?.roots ?? [], rec.since, reload)
  const [nodeId, setNodeId] = useState<string | undefined>(undefined)
  useEffect(() => {
    call<Status>('GET', '/status', { quiet: true }).then(s => { setNodeId(s.nodeId) }, () => { /* only marks "this node"; the page works without it */ })
  }, [])

  if (rec.data === undefined) {
    if (rec.error instanceof ApiFailure && rec.error.status === 404) {
      return <section><h1>No record here</h1><p>This node has no record at <code>{addr}</code>.</p><p><a href="/">Back to the library</a></p></section>
    }
    return <section><h1>Record</h1>{rec.loading ? <p class="muted">Loading…</p> : <ErrorNote error={rec.error} />}</section>
  }
  const r = rec.data
  const m = r.metadata
  const title = recordTitle(m, r.hashId)
  const holders = Object.keys(m).filter(k => k.startsWith('holders/')).map(k => k.slice('holders/'.length))
  const fileCid = r.canonical_cid ?? r.cids[0]
  const ed = { rec: r, reload }
  const names = useNodeNames()
  return (
    <article class="record" aria-labelledby="rec-title">
      <p class="crumbs"><a href="/">Library</a> / record</p>
      <h1 id="rec-title">{title}</h1>
      <p class="facts">
        {[m.type, m.year, formatBytes(m.sizeByte), m.mimeType].filter(x => x !== undefined && x !== '').join(' · ')}
      </p>
      <dl class="ids">
        <dt>Canonical CID</dt>
        <dd>{r.canonical_cid === undefined ? <span class="muted">none</span> : <><code class="wrap">{r.canonical_cid}</code> <CopyButton text={r.canonical_cid}
          label="canonical CID" /></>}</dd>
        <dt>Record id</dt>
        <dd><code>{r.hashId}</code>{r.roots.length > 1 && <span class="muted"> (a group of {r.roots.length} roots sharing a CID)</span>}</dd>
      </dl>
      <ErrorNote error={rec.error} />
      {fileCid !== undefined && <FileSection cid={fileCid} title={title} fileName={m.fileName} names={names} />}

      <section aria-labelledby="cids-title">
        <h2 id="cids-title">CIDs <span class="count">{r.cids.length}</span></h2>
        <ul class="cids">
          {r.cids.map(c => (
            <li key={c}>
              <code class="wrap">{c}</code>{c === r.canonical_cid && <span class="badge">canonical</span>} <CopyButton text={c} label={`CID ${c}`} />
            </li>
          ))}
        </ul>
        <AddCid ed={ed} />
      </section>

      <section aria-labelledby="holders-title">
        <h2 id="holders-title">Holders <span class="count">{holders.length}</span></h2>
        {holders.length === 0
          ? <p class="muted">No node has declared a copy of the bytes.</p>
          : <ul data-testid="holders">{holders.map(h => <li key={h}><NodeLabel id={h} names={names} />{h === nodeId &&
            <span class="badge">this node</span>}</li>)}</ul>}
        {holders.length > 0 && fileCid !== undefined && (
          // GET /file/<cid> picks the holder itself (its own copy first, then connected holders): one link, not one per holder.
          <p><a href={`/file/${encodeURIComponent(fileCid)}`} target="_blank" rel="noopener" data-testid="play-through">Play through this node</a> <span
            class="muted">(from its own copy, else streamed from a holder it reaches)</span></p>
        )}
      </section>

      <section aria-labelledby="dups-title">
        <h2 id="dups-title">Duplicates on this node <span class="count">{r.duplicates.length}</span></h2>
        {r.duplicates.length === 0 ? <p class="muted">No other copy of the same content on this node.</p>
          : <ul>{r.duplicates.map(d => <li key={d}><code class="wrap">{d}</code></li>)}</ul>}
      </section>

      <section aria-labelledby="fields-title">
        <h2 id="fields-title">Fields</h2>
        <FieldTree ed={ed} />
        <AddField ed={ed} />
      </section>

      <Versions rec={r} nodeId={nodeId} names={names} />

      <details class="raw">
        <summary>Raw JSON</summary>
        <pre>{JSON.stringify(r, null, 2)}</pre>
      </details>
    </article>
  )
}

/** Types the browser says it can play; `canPlayType` answers "", "maybe" or "probably". */
function playable (type: string | undefined): 'video' | 'audio' | 'image' | undefined {
  if (type === undefined) return undefined
  const base = type.split(';')[0].trim()
  if (base.startsWith('image/')) return 'image'
  if (base.startsWith('video/') && document.createElement('video').canPlayType(base) !== '') return 'video'
  if (base.startsWith('audio/') && document.createElement('audio').canPlayType(base) !== '') return 'audio'
  return undefined
}

/**
 * A file this node has no copy of is streamed from a peer that has (the
 * node does that behind `/file/{cid}`): a HEAD says whether one can, what
 * it is, and which node it would come from.
 */
async function fromPeer (url: string, signal: AbortSignal): Promise<FileInfo & { servedBy?: string }> {
  const res = await fetch(url, { method: 'HEAD', signal })
  const servedBy = res.headers.get('x-meta-core-served-by')
  if (!res.ok || servedBy === null) return { exists: false }
  return { exists: true, contentType: res.headers.get('content-type') ?? undefined, size: Number(res.headers.get('content-length')), servedBy }
}

function FileSection ({ cid, title, fileName, names }: { cid: string, title: string, fileName?: string, names: ReadonlyMap<string, string> }) {
  const url = `/file/${encodeURIComponent(cid)}`
  const info = useLoad(cid, async (signal): Promise<FileInfo & { servedBy?: string }> => {
    const own = await call<FileInfo>('GET', `/api/file/${encodeURIComponent(cid)}/info`, { signal, quiet: true })
    return own.exists ? own : await fromPeer(url, signal)
  })
  const i = info.data
  if (i === undefined) return null
  if (!i.exists) return <section aria-labelledby="file-title"><h2 id="file-title">File</h2><p
    class="muted">No node holding the bytes can serve them now.</p></section>
  const kind = playable(i.contentType)
  return (
    <section aria-labelledby="file-title">
      <h2 id="file-title">File</h2>
      {kind === 'video' && <video class="preview" controls preload="metadata" src={url} aria-label={`Preview of ${title}`} />}
      {kind === 'audio' && <audio class="preview" controls preload="metadata" src={url} aria-label={`Preview of ${title}`} />}
      {kind === 'image' && <img class="preview" src={url} alt={`Preview of ${title}`} />}
      <p>
        <a href={url} target="_blank" rel="noopener">{kind === 'video' || kind === 'audio' ? 'Play in a new tab' : 'Open'}</a>
        {' · '}
        <a href={url} download={fileName ?? true}>Download</a>
        <span class="muted"> {formatBytes(i.size)}{i.contentType !== undefined && `, ${i.contentType}`}{i.filePath !== undefined && `, ${i.filePath}`}</span>
      </p>
      {i.servedBy !== undefined && <p class="served-by" data-testid="served-by">Streamed from node <NodeLabel id={i.servedBy}
        names={names} />, which holds the file (this node has no copy).</p>}
    </section>
  )
}

function Versions ({ rec, nodeId, names }: { rec: RecordView, nodeId: string | undefined, names: ReadonlyMap<string, string> }) {
  const rows = [...rec.versions].sort((a, b) => (a.hlc < b.hlc ? 1 : a.hlc > b.hlc ? -1 : a.field.localeCompare(b.field)))
  return (
    <section aria-labelledby="versions-title">
      <h2 id="versions-title">Versions</h2>
      <p class="muted">
        When and where each field was last written (newest first); deleted fields stay as tombstones so a peer's older write cannot bring them back.
      </p>
      <div class="table-wrap">
        <table class="versions">
          <thead><tr><th scope="col">Field</th><th scope="col">Written</th><th scope="col">By node</th>{rec.roots.length > 1 &&
            <th scope="col">Root</th>}</tr></thead>
          <tbody>
            {rows.map(v => (
              <tr key={`${v.root}/${v.field}`} class={v.deleted ? 'deleted' : undefined}>
                <td><code>{v.field}</code>{v.deleted && <span class="badge warn">deleted</span>}</td>
                <td><time dateTime={v.at} title={`HLC ${v.hlc}`}>{formatTime(v.at)}</time></td>
                <td><NodeLabel id={v.origin} names={names} />{v.origin === nodeId && <span class="badge">this node</span>}</td>
                {rec.roots.length > 1 && <td><code title={v.root}>{shortId(v.root, 6)}</code></td>}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}
