/**
 * Asks for a node's API token after the node refused a request (401). The
 * token is kept in this tab's sessionStorage only; Cancel leaves the request
 * refused, and the page shows the node's message.
 */
import { useEffect, useRef, useState } from 'preact/hooks'

export interface TokenRequest {
  origin: string
  /** The node's own refusal message. */
  reason: string
  resolve: (token: string | undefined) => void
}

export function TokenDialog ({ req }: { req: TokenRequest }) {
  const ref = useRef<HTMLDialogElement>(null)
  const [value, setValue] = useState('')
  useEffect(() => {
    const d = ref.current
    if (d !== null && !d.open) d.showModal()
  }, [])
  const own = req.origin === location.origin
  return (
    <dialog ref={ref} class="dialog" aria-labelledby="token-title" onCancel={(e) => { e.preventDefault(); req.resolve(undefined) }}>
      <form method="dialog" onSubmit={(e) => { e.preventDefault(); req.resolve(value.trim() === '' ? undefined : value.trim()) }}>
        <h2 id="token-title">API token needed</h2>
        <p>
          {own ? 'This node' : <>The node at <code>{req.origin}</code></>} refused the request: <span class="error-inline">{req.reason}</span>
        </p>
        <p class="muted">The token (META_CORE_API_TOKEN) is kept in this browser tab only, until it closes.</p>
        <label for="token-input">Token</label>
        <input id="token-input" type="password" autocomplete="off" value={value} onInput={e => { setValue(e.currentTarget.value) }} autofocus />
        <div class="actions">
          <button type="submit">Use token</button>
          <button type="button" class="secondary" onClick={() => { req.resolve(undefined) }}>Cancel</button>
        </div>
      </form>
    </dialog>
  )
}
