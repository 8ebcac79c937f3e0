/**
 * The API token, per node origin, kept in sessionStorage only: it lives as
 * long as the tab and is never written to disk by the page (no
 * localStorage, no cookie). Listeners hear when it changes, so the event
 * streams reconnect with it.
 */
const KEY = 'meta-core-token:'
const listeners = new Set<() => void>()

function storageKey (origin: string): string {
  return KEY + origin
}

export function getToken (origin: string = location.origin): string | undefined {
  try {
    return sessionStorage.getItem(storageKey(origin)) ?? undefined
  } catch {
    return undefined // storage disabled: the page still works, it asks again when refused
  }
}

export function setToken (token: string | undefined, origin: string = location.origin): void {
  try {
    if (token === undefined || token === '') sessionStorage.removeItem(storageKey(origin))
    else sessionStorage.setItem(storageKey(origin), token)
  } catch { /* storage disabled: the token lasts until the page reloads, in the requests that already carry it */ }
  for (const l of listeners) l()
}

export function onTokenChange (l: () => void): () => void {
  listeners.add(l)
  return () => { listeners.delete(l) }
}
