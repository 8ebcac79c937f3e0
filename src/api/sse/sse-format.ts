/**
 * SSE wire format (docs/design/original.md#sse): one event per stream entry, `id:` only where a
 * resume point exists, `event:` the entry's `type` (or `message`), `data:`
 * the JSON of the other fields on a single line.
 */

/** An event name is a single token on its line: CR/LF would let a value forge further fields. */
function eventName (type: string | undefined): string {
  if (type === undefined || type === '') return 'message'
  return type.replace(/[\r\n]/g, '')
}

/** Formats one stream entry (its id and fields as clients see them). */
export function formatEntry (id: string, fields: Record<string, string>): string {
  const { type, ...rest } = fields
  // JSON.stringify escapes CR and LF, so the data stays on one line.
  return formatEvent(eventName(type), JSON.stringify(rest), id)
}

export function formatEvent (event: string, data: string, id?: string): string {
  return (id === undefined ? '' : `id: ${id}\n`) + `event: ${eventName(event)}\ndata: ${data}\n\n`
}

/** The heartbeat comment a proxy or client sees after a silence (docs/design/original.md#sse). */
export const KEEP_ALIVE = ':keep-alive\n\n'
