/** Small pieces every view uses. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { errorText } from '../api.js'
import { changeMark } from '../live.js'

/** A copy-to-clipboard button; says "Copied" for a moment. */
export function CopyButton ({ text, label }: { text: string, label: string }) {
  const [done, setDone] = useState(false)
  const copy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(text)
    } catch {
      // No clipboard permission (plain http on another host): select-and-copy fallback.
      const ta = document.createElement('textarea')
      ta.value = text
      document.body.append(ta)
      ta.select()
      document.execCommand('copy')
      ta.remove()
    }
    setDone(true)
    setTimeout(() => { setDone(false) }, 1500)
  }
  return (
    <button type="button" class="small" aria-label={`Copy ${label}`} onClick={() => { void copy() }}>
      {done ? 'Copied' : 'Copy'}
    </button>
  )
}

export function ErrorNote ({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null
  return <p class="error" role="alert">{errorText(error)}</p>
}

export interface Loaded<T> {
  data: T | undefined
  /** changeMark() when the load that gave `data` started (see useRootChanges). */
  since: number
  error: unknown
  loading: boolean
  reload: () => void
}

/**
 * Runs `load` when `key` changes and on `reload()`; keeps the last good data
 * while a reload runs (a live update never blanks the view), and ignores
 * answers that arrive after a newer request started. A reload is
 * `quiet`: it happens in the background (a change seen on the event
 * stream), so a refusal shows as an error instead of asking for a token.
 */
export function useLoad<T> (key: string, load: (signal: AbortSignal, quiet: boolean) => Promise<T>): Loaded<T> {
  const [state, setState] = useState<{ key: string, data?: T, since: number, error?: unknown, loading: boolean }>({ key, since: 0, loading: true })
  const [tick, setTick] = useState(0)
  const loadRef = useRef(load)
  loadRef.current = load
  const loadedKey = useRef<string | undefined>(undefined)
  useEffect(() => {
    const ctl = new AbortController()
    const quiet = loadedKey.current === key
    loadedKey.current = key
    const since = changeMark()
    setState(s => ({ ...s, key, data: s.key === key ? s.data : undefined, error: undefined, loading: true }))
    loadRef.current(ctl.signal, quiet).then(
      data => { if (!ctl.signal.aborted) setState({ key, data, since, loading: false }) },
      (error: unknown) => { if (!ctl.signal.aborted) setState(s => ({ ...s, key, data: s.key === key ? s.data : undefined, error, loading: false })) }
    )
    return () => { ctl.abort() }
  }, [key, tick])
  const reload = useCallback(() => { setTick(t => t + 1) }, [])
  return { data: state.key === key ? state.data : undefined, since: state.since, error: state.error, loading: state.loading, reload }
}

/** Calls `fn` every `ms` while mounted (and the tab is visible). */
export function useInterval (fn: () => void, ms: number): void {
  const ref = useRef(fn)
  ref.current = fn
  useEffect(() => {
    const t = setInterval(() => { if (document.visibilityState === 'visible') ref.current() }, ms)
    return () => { clearInterval(t) }
  }, [ms])
}
