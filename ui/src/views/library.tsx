/**
 * The library: the API's own search (GET /api/search, its search language of
 * free text and field:value filters: src/api/search-query.ts), ordered as the API can (the order records were added, or by a
 * field's value), a page of results with the true total, and paging by
 * offset so each page has its own address. Results follow live changes: a change to a
 * shown record runs the search again (debounced), so a row updates in place
 * or leaves a result it no longer matches.
 */
import { useCallback } from 'preact/hooks'
import { call } from '../api.js'
import { formatBytes, formatCount, recordTitle, shortId } from '../format.js'
import { useRootChanges } from '../live.js'
import { href, navigate } from '../router.js'
import type { SearchResponse } from '../wire.js'
import { CopyButton, ErrorNote, useLoad } from './common.js'

export const PAGE_SIZE = 50

/** The orders offered: the API sorts by any field (`-field` descending); these are the columns shown. */
const ORDERS: Array<[string, string]> = [
  ['', 'Order added'],
  ['title', 'Title, A–Z'],
  ['-title', 'Title, Z–A'],
  ['-year', 'Year, newest first'],
  ['year', 'Year, oldest first'],
  ['type', 'Type'],
  ['-sizeByte', 'Size, largest first'],
  ['sizeByte', 'Size, smallest first']
]

/** Up/Down move between result links, as Tab does; Enter opens (a link's own behaviour). */
function moveFocus (e: KeyboardEvent): void {
  if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return
  const links = [...document.querySelectorAll<HTMLAnchorElement>('#results a.open')]
  const i = links.indexOf(document.activeElement as HTMLAnchorElement)
  if (i < 0) return
  e.preventDefault()
  if (e.key === 'ArrowUp' && i === 0) { document.getElementById('q')?.focus(); return }
  links[Math.max(0, Math.min(links.length - 1, i + (e.key === 'ArrowDown' ? 1 : -1)))].focus()
}

export function Library ({ q, offset, sort }: { q: string, offset: number, sort: string }) {
  const res = useLoad(`${q}\u0000${offset}\u0000${sort}`, async (signal, quiet) =>
    await call<SearchResponse>('GET', `/api/search?${new URLSearchParams({ q, limit: String(PAGE_SIZE), offset: String(offset), ...(sort === '' ? {} : { sort }) }).toString()}`, { signal, quiet }))
  const reload = useCallback(() => { res.reload() }, [res.reload])
  useRootChanges(res.data?.results.map(r => r.hashId) ?? [], res.since, reload, 250)

  const data = res.data
  const from = data === undefined || data.count === 0 ? 0 : offset + 1
  const to = data === undefined ? 0 : offset + data.count
  return (
    <section aria-labelledby="lib-title">
      <h1 id="lib-title">{q === '' ? 'Library' : <>Search: <q>{q}</q></>}</h1>
      <p class="summary" role="status" aria-live="polite">
        {data === undefined
          ? (res.loading ? 'Searching…' : '')
          : data.total === 0
            ? 'No record matches.'
            : <>{formatCount(from)}–{formatCount(to)} of <strong>{formatCount(data.total)}</strong> {q === '' ? 'records' : 'matches'}{sort === ''
              ? ', in the order they were added' : ''}</>}
      </p>
      <ErrorNote error={res.error} />
      <p class="order">
        <label for="order">Order</label>{' '}
        <select id="order" value={sort} onChange={e => { navigate({ view: 'library', q, offset: 0, sort: e.currentTarget.value }) }}>
          {ORDERS.some(([v]) => v === sort) ? null : <option value={sort}>{sort}</option>}
          {ORDERS.map(([v, label]) => <option key={v} value={v}>{label}</option>)}
        </select>
      </p>
      {data !== undefined && data.results.length > 0 && (
        <div class="table-wrap">
          <table id="results" class="results" onKeyDown={moveFocus}>
            <thead>
              <tr><th scope="col">Title</th><th scope="col">Year</th><th scope="col">Type</th><th scope="col" class="num">Size</th><th
                scope="col">Canonical CID</th></tr>
            </thead>
            <tbody>
              {data.results.map(r => {
                const m = r.metadata
                const addr = r.canonical_cid ?? r.hashId
                return (
                  <tr key={r.hashId} data-root={r.hashId}>
                    <td><a class="open" href={href({ view: 'record', addr })}>{recordTitle(m, r.hashId)}</a></td>
                    <td>{m.year ?? ''}</td>
                    <td>{m.type ?? m.fileType ?? ''}</td>
                    <td class="num">{formatBytes(m.sizeByte)}</td>
                    <td class="cid">
                      {r.canonical_cid === undefined
                        ? <span class="muted">none</span>
                        : <><code title={r.canonical_cid}>{shortId(r.canonical_cid, 8)}</code> <CopyButton text={r.canonical_cid} label={`canonical CID of ${recordTitle(m, r.hashId)}`} /></>}
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      )}
      {data !== undefined && data.total > PAGE_SIZE && (
        <nav class="pager" aria-label="Result pages">
          {offset > 0 ? <a href={href({ view: 'library', q, offset: Math.max(0, offset - PAGE_SIZE), sort })} rel="prev">← Previous</a> : <span />}
          <span class="muted">Page {formatCount(Math.floor(offset / PAGE_SIZE) + 1)} of {formatCount(Math.ceil(data.total / PAGE_SIZE))}</span>
          {to < data.total ? <a href={href({ view: 'library', q, offset: offset + PAGE_SIZE, sort })} rel="next">Next →</a> : <span />}
        </nav>
      )}
      <details class="help">
        <summary>Search syntax</summary>
        <ul>
          <li><code>blue river</code>: every word in the title, file name, original or show title, or path</li>
          <li><code>year:1999</code>: the field contains the value; <code>year:=1999</code>: equals it</li>
          <li><code>genres:drama</code>: a set member (<code>genres/Drama</code>) counts too</li>
          <li><code>title:"the blue"</code>: quotes keep spaces; a bare CID finds its record</li>
        </ul>
      </details>
    </section>
  )
}
