/**
 * Editing a record through the API's own write routes: change or delete a
 * field (PATCH /meta/{hash}, DELETE /meta/{hash}/{field}), add a field, add
 * a CID (a `cids/<cid>` member). A refusal shows the API's own message; a
 * node with a token asks for it (api.ts). If the field changes elsewhere
 * while it is being edited, the editor says so before it is overwritten.
 */
import { useRef, useState } from 'preact/hooks'
import { call, errorText, fieldPath } from '../api.js'
import type { RecordView } from '../wire.js'
import { ErrorNote } from './common.js'
import { FieldValue } from './labels.js'

/** Fields shown in their own sections rather than in the outline. */
const OWN_SECTIONS = ['cids/', 'holders/']
/**
 * Where the file is on a node's disk: written by that node's watcher only,
 * and refused to clients (400 watcher_owned_field), so shown without Edit
 * or Delete.
 */
const LOCATION_FIELDS = ['filePath', 'sizeByte', 'mtimeNano']

interface TreeNode { name: string, path: string, value?: string, kids: Map<string, TreeNode> }

function buildTree (metadata: Record<string, string>): TreeNode {
  const root: TreeNode = { name: '', path: '', kids: new Map() }
  for (const field of Object.keys(metadata).sort(naturalOrder)) {
    if (OWN_SECTIONS.some(p => field.startsWith(p))) continue
    let n = root
    for (const seg of field.split('/')) {
      let k = n.kids.get(seg)
      if (k === undefined) { k = { name: seg, path: n.path === '' ? seg : `${n.path}/${seg}`, kids: new Map() }; n.kids.set(seg, k) }
      n = k
    }
    n.value = metadata[field]
  }
  return root
}

/** `stream/2` before `stream/10`. */
function naturalOrder (a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true })
}

/** The record as shown, and how to read it again after a write (the event stream would too, but a write's own result must not wait on it). */
export interface Editable { rec: RecordView, reload: () => void }

async function patch ({ rec, reload }: Editable, fields: Record<string, string>): Promise<void> {
  await call('PATCH', `/meta/${encodeURIComponent(rec.hashId)}`, { body: fields })
  reload()
}

export function FieldTree ({ ed }: { ed: Editable }) {
  const tree = buildTree(ed.rec.metadata)
  if (tree.kids.size === 0) return <p class="muted">No fields.</p>
  return <ul class="tree">{[...tree.kids.values()].map(n => <TreeItem key={n.path} node={n} ed={ed} />)}</ul>
}

function TreeItem ({ node, ed }: { node: TreeNode, ed: Editable }) {
  if (node.kids.size === 0) return <li><FieldRow name={node.name} path={node.path} ed={ed} /></li>
  return (
    <li>
      <details open={node.kids.size <= 12}>
        <summary><span class="branch">{node.name}</span> <span class="count">{node.kids.size}</span></summary>
        {node.value !== undefined && <FieldRow name="(value)" path={node.path} ed={ed} />}
        <ul class="tree">{[...node.kids.values()].map(n => <TreeItem key={n.path} node={n} ed={ed} />)}</ul>
      </details>
    </li>
  )
}

function FieldRow ({ name, path, ed }: { name: string, path: string, ed: Editable }) {
  const value = ed.rec.metadata[path]
  const [mode, setMode] = useState<'view' | 'edit' | 'confirm-delete'>('view')
  const [draft, setDraft] = useState('')
  const [base, setBase] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const editRef = useRef<HTMLButtonElement>(null)
  const id = `f-${path.replace(/[^A-Za-z0-9_-]/g, '_')}`

  const close = (): void => { setMode('view'); setError(undefined); setTimeout(() => editRef.current?.focus(), 0) }
  const start = (): void => { setDraft(value ?? ''); setBase(value); setError(undefined); setMode('edit') }
  const run = async (work: () => Promise<void>): Promise<void> => {
    setBusy(true)
    setError(undefined)
    try {
      await work()
      close()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  const changedElsewhere = mode === 'edit' && value !== base

  return (
    <div class={`field${mode === 'edit' ? ' editing' : ''}`} data-field={path}>
      <span class="name" id={`${id}-name`}>{name}</span>
      {mode !== 'edit' && <span class="value" aria-labelledby={`${id}-name`}>{value === '' ? <span class="muted">(empty)</span>
        : value === undefined ? value : <FieldValue field={path} value={value} />}</span>}
      {mode === 'edit' && (
        <form class="edit" onSubmit={e => { e.preventDefault(); void run(async () => { await patch(ed, { [path]: draft }) }) }}>
          <label for={`${id}-input`} class="visually-hidden">New value of {path}</label>
          {(draft.length > 60 || draft.includes('\n'))
            ? <textarea id={`${id}-input`} rows={4} value={draft} onInput={e => { setDraft(e.currentTarget.value) }}
              onKeyDown={e => { if (e.key === 'Escape') { e.stopPropagation(); close() } }} autofocus />
            : <input id={`${id}-input`} value={draft} onInput={e => { setDraft(e.currentTarget.value) }}
              onKeyDown={e => { if (e.key === 'Escape') { e.stopPropagation(); close() } }} autofocus />}
          {changedElsewhere && <p class="warn" role="alert">Changed elsewhere while you edit: now {value === undefined ? 'deleted'
            : <q>{value}</q>}. Saving overwrites it.</p>}
          <button type="submit" disabled={busy}>{changedElsewhere ? 'Save anyway' : 'Save'}</button>
          <button type="button" class="secondary" onClick={close}>Cancel</button>
        </form>
      )}
      {mode === 'view' && LOCATION_FIELDS.includes(path) && <span class="muted small" title="Written by the file watcher of the node that holds the file">from the file</span>}
      {mode === 'view' && !LOCATION_FIELDS.includes(path) && (
        <span class="actions">
          <button type="button" class="small" ref={editRef} aria-label={`Edit ${path}`} onClick={start}>Edit</button>
          <button type="button" class="small secondary" aria-label={`Delete ${path}`}
            onClick={() => { setError(undefined); setMode('confirm-delete') }}>Delete</button>
        </span>
      )}
      {mode === 'confirm-delete' && (
        <span class="actions">
          <button type="button" class="small danger" disabled={busy} autofocus
            onClick={() => { void run(async () => { await call('DELETE', `/meta/${encodeURIComponent(ed.rec.hashId)}/${fieldPath(path)}`); ed.reload() }) }}>
            Delete {path}
          </button>
          <button type="button" class="small secondary" onClick={close}>Keep</button>
        </span>
      )}
      <ErrorNote error={error} />
    </div>
  )
}

export function AddField ({ ed }: { ed: Editable }) {
  const [field, setField] = useState('')
  const [value, setValue] = useState('')
  const [status, setStatus] = useState('')
  const [error, setError] = useState<unknown>(undefined)
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault()
    setError(undefined)
    setStatus('')
    const f = field.trim()
    try {
      await patch(ed, { [f]: value })
      setStatus(`Saved ${f}.`)
      setField('')
      setValue('')
    } catch (err) {
      setError(err)
    }
  }
  return (
    <form class="add" onSubmit={e => { void submit(e) }} aria-labelledby="add-field-title">
      <h3 id="add-field-title">Add a field</h3>
      <label for="new-field">Field path</label>
      <input id="new-field" required placeholder="e.g. titles/eng" value={field} onInput={e => { setField(e.currentTarget.value) }} />
      <label for="new-value">Value</label>
      <input id="new-value" value={value} onInput={e => { setValue(e.currentTarget.value) }} />
      <button type="submit">Add field</button>
      <p class="ok" role="status">{status}</p>
      <ErrorNote error={error} />
    </form>
  )
}

export function AddCid ({ ed }: { ed: Editable }) {
  const [cid, setCid] = useState('')
  const [error, setError] = useState<string | undefined>(undefined)
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault()
    setError(undefined)
    try {
      await patch(ed, { [`cids/${cid.trim()}`]: 'true' })
      setCid('')
    } catch (err) {
      setError(errorText(err))
    }
  }
  return (
    <form class="add inline" onSubmit={e => { void submit(e) }}>
      <label for="new-cid">Add a CID</label>
      <input id="new-cid" required placeholder="bafy…" value={cid} onInput={e => { setCid(e.currentTarget.value) }} spellcheck={false} />
      <button type="submit">Add CID</button>
      {error !== undefined && <p class="error" role="alert">{error}</p>}
    </form>
  )
}
