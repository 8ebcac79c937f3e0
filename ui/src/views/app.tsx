/**
 * The page's frame: the header (search box, navigation, token state), the
 * current view, the activity feed, and the token dialog. Keyboard: `/`
 * focuses the search box from anywhere, Enter runs it (and opens a focused
 * result), Escape closes the open record or dialog.
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import { setTokenPrompt } from '../api.js'
import { startLive } from '../live.js'
import { href, navigate, onLinkClick, useRoute } from '../router.js'
import { getToken, onTokenChange, setToken } from '../token.js'
import { ActivityFeed } from './activity.js'
import { Library } from './library.js'
import { NodePanel } from './node.js'
import { RecordPage } from './record.js'
import { TokenDialog, type TokenRequest } from './token-dialog.js'

/** Whether keys typed now belong to a form control rather than to the page's shortcuts. */
function typingInField (t: EventTarget | null): boolean {
  const el = t as HTMLElement | null
  return el !== null && (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName))
}

export function App () {
  const route = useRoute()
  const searchRef = useRef<HTMLInputElement>(null)
  const [draft, setDraft] = useState(route.view === 'library' ? route.q : '')
  const [tokenReq, setTokenReq] = useState<TokenRequest | undefined>(undefined)
  const [hasToken, setHasToken] = useState(getToken() !== undefined)
  /** Where Escape on a record returns to: the last library address this tab showed. */
  const lastLibrary = useRef('/')

  useEffect(() => onTokenChange(() => { setHasToken(getToken() !== undefined) }), [])
  useEffect(() => {
    setTokenPrompt(async (origin, reason) => await new Promise<string | undefined>(resolve => {
      setTokenReq({ origin, reason, resolve: (t) => { setTokenReq(undefined); resolve(t) } })
    }))
    startLive()
  }, [])

  useEffect(() => {
    if (route.view === 'library') {
      setDraft(route.q)
      lastLibrary.current = href(route)
    }
    const t = route.view === 'library' ? (route.q === '' ? 'Library' : `${route.q} – search`) : route.view === 'node' ? 'Node' : 'Record'
    document.title = `${t} · meta-core`
  }, [route.view === 'library' ? href(route) : route.view])

  useEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return
      if (e.key === '/' && !typingInField(e.target)) {
        e.preventDefault()
        searchRef.current?.focus()
        searchRef.current?.select()
      } else if (e.key === 'Escape' && !typingInField(e.target) && tokenReq === undefined) {
        if (route.view === 'record' || route.view === 'node') {
          e.preventDefault()
          navigate(lastLibrary.current)
        }
      }
    }
    addEventListener('keydown', onKey)
    return () => { removeEventListener('keydown', onKey) }
  }, [route.view, tokenReq])

  const submit = (e: Event): void => {
    e.preventDefault()
    navigate({ view: 'library', q: draft.trim(), offset: 0, sort: route.view === 'library' ? route.sort : '' })
  }
  const toResults = (e: KeyboardEvent): void => {
    if (e.key !== 'ArrowDown') return
    const first = document.querySelector<HTMLAnchorElement>('#results a.open')
    if (first !== null) { e.preventDefault(); first.focus() }
  }

  return (
    <div class="shell" onClick={onLinkClick}>
      <a class="skip" href="#main">Skip to content</a>
      <header class="bar">
        <a class="brand" href="/">meta-core</a>
        <form class="search" role="search" onSubmit={submit}>
          <label for="q" class="visually-hidden">Search the library</label>
          <input
            id="q" ref={searchRef} type="search" name="q" autocomplete="off" spellcheck={false}
            placeholder="Search: words, field:value, a CID   ( / )"
            value={draft} onInput={e => { setDraft(e.currentTarget.value) }} onKeyDown={toResults}
          />
          <button type="submit">Search</button>
        </form>
        <nav aria-label="Views">
          <a href="/" aria-current={route.view === 'library' ? 'page' : undefined}>Library</a>
          <a href="/ui/node" aria-current={route.view === 'node' ? 'page' : undefined}>Node</a>
          {hasToken && <button type="button" class="small" onClick={() => { setToken(undefined) }}>Forget token</button>}
        </nav>
      </header>
      <div class="layout">
        <main id="main" class="main" tabIndex={-1}>
          {route.view === 'library' && <Library q={route.q} offset={route.offset} sort={route.sort} />}
          {route.view === 'record' && <RecordPage addr={route.addr} />}
          {route.view === 'node' && <NodePanel />}
        </main>
        <aside class="side" aria-label="Activity">
          <ActivityFeed />
        </aside>
      </div>
      {tokenReq !== undefined && <TokenDialog req={tokenReq} />}
    </div>
  )
}
