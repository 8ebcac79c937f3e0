/**
 * Every view has its own address (bookmark, share, back button):
 *   /?q=<query>&sort=<field>&offset=<n>   the library, with that search and order
 *   /cid/<address>           a record, by any of its CIDs (or its record id)
 *   /ui/node                 the node panel
 * The node answers index.html on all of them (src/api/routes/ui-routes.ts).
 */
import { useEffect, useState } from 'preact/hooks'

export type Route =
  | { view: 'library', q: string, offset: number, sort: string }
  | { view: 'record', addr: string }
  | { view: 'node' }

export function parseRoute (loc: { pathname: string, search: string }): Route {
  if (loc.pathname.startsWith('/cid/')) {
    let addr = loc.pathname.slice('/cid/'.length)
    try { addr = decodeURIComponent(addr) } catch { /* kept as typed: the API answers invalid_address */ }
    return { view: 'record', addr }
  }
  if (loc.pathname === '/ui/node') return { view: 'node' }
  const params = new URLSearchParams(loc.search)
  const offset = Number(params.get('offset') ?? '0')
  return { view: 'library', q: params.get('q') ?? '', offset: Number.isSafeInteger(offset) && offset > 0 ? offset : 0, sort: params.get('sort') ?? '' }
}

export function href (r: Route): string {
  switch (r.view) {
    case 'record': return `/cid/${encodeURIComponent(r.addr)}`
    case 'node': return '/ui/node'
    case 'library': {
      const p = new URLSearchParams()
      if (r.q !== '') p.set('q', r.q)
      if (r.sort !== '') p.set('sort', r.sort)
      if (r.offset > 0) p.set('offset', String(r.offset))
      const s = p.toString()
      return s === '' ? '/' : `/?${s}`
    }
  }
}

const listeners = new Set<() => void>()

export function navigate (r: Route | string, opts: { replace?: boolean } = {}): void {
  const url = typeof r === 'string' ? r : href(r)
  if (url === location.pathname + location.search) return
  if (opts.replace === true) history.replaceState(null, '', url)
  else history.pushState(null, '', url)
  for (const l of listeners) l()
}

export function useRoute (): Route {
  const [route, setRoute] = useState(() => parseRoute(location))
  useEffect(() => {
    const update = (): void => { setRoute(parseRoute(location)) }
    listeners.add(update)
    addEventListener('popstate', update)
    return () => { listeners.delete(update); removeEventListener('popstate', update) }
  }, [])
  return route
}

/** A same-origin link click that the page handles itself (plain left click, no modifier): no reload. */
export function onLinkClick (e: MouseEvent): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return
  const a = (e.target as Element | null)?.closest('a')
  if (a === null || a === undefined || a.target !== '' || a.hasAttribute('download') || a.origin !== location.origin) return
  const path = a.pathname
  if (path !== '/' && !path.startsWith('/cid/') && !path.startsWith('/ui')) return
  e.preventDefault()
  navigate(path + a.search)
}
