/**
 * The node: health, counts, the watcher's progress, and the mesh. Polled
 * every 2 s while shown (the figures come from counters and the background
 * sweep, so polling costs the node nothing noticeable).
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import { call, errorText } from '../api.js'
import { formatAgo, formatBytes, formatCount, formatDuration, formatTime, shortId } from '../format.js'
import type { FullHashStatus, Health, Stats, Status, WatcherStatus } from '../wire.js'
import { ErrorNote, useInterval } from './common.js'
import { MeshPanel } from './mesh.js'

const POLL_MS = 2000

interface Snapshot { health?: Health, status?: Status, stats?: Stats, watcher?: WatcherStatus | null, error?: unknown, at: number }

async function snapshot (quiet: boolean): Promise<Snapshot> {
  const [health, status, stats, watchers] = await Promise.allSettled([
    call<Health>('GET', '/health', { quiet }),
    call<Status>('GET', '/status', { quiet }),
    call<Stats>('GET', '/api/stats', { quiet: true }),
    call<{ watchers: WatcherStatus[] }>('GET', '/api/watchers', { quiet: true })
  ])
  const s: Snapshot = { at: Date.now() }
  if (health.status === 'fulfilled') s.health = health.value
  if (status.status === 'fulfilled') s.status = status.value
  else s.error = status.reason
  if (stats.status === 'fulfilled') s.stats = stats.value
  // A node without a watcher answers 503 watcher_unavailable: null says "none", undefined "not known".
  if (watchers.status === 'fulfilled') s.watcher = watchers.value.watchers[0] ?? null
  else if (errorText(watchers.reason).startsWith('watcher_unavailable')) s.watcher = null
  return s
}

export function NodePanel () {
  const [snap, setSnap] = useState<Snapshot | undefined>(undefined)
  const first = useRef(true)
  const refresh = (): void => {
    const quiet = !first.current
    first.current = false
    snapshot(quiet).then(setSnap, (error: unknown) => { setSnap({ error, at: Date.now() }) })
  }
  useEffect(refresh, [])
  useInterval(refresh, POLL_MS)

  const st = snap?.status
  return (
    <section aria-labelledby="node-title">
      <h1 id="node-title">Node</h1>
      {snap === undefined && <p class="muted">Loading…</p>}
      <ErrorNote error={snap?.error} />
      <div class="cards">
        <section class="card" aria-labelledby="health-title">
          <h2 id="health-title">Health</h2>
          <dl class="kv">
            <dt>Status</dt><dd><span class={`state ${snap?.health?.status ?? 'unknown'}`}>{snap?.health?.status ?? 'unknown'}</span></dd>
            {(snap?.health?.reasons ?? []).length > 0 && <><dt>Why</dt><dd data-testid="health-reasons">{snap?.health?.reasons.map(r =>
              <div key={r.reason}>{r.message}</div>)}</dd></>}
            <dt>Storage</dt><dd>{snap?.health === undefined ? '—' : snap.health.storage ? 'up' : 'down'}</dd>
            <dt>Version</dt><dd>{st?.version ?? '—'}</dd>
            <dt>Node id</dt><dd>{st === undefined ? '—' : <code title={st.nodeId}>{shortId(st.nodeId, 8)}</code>}</dd>
            <dt>Up for</dt><dd>{formatDuration(st?.uptimeSeconds)}</dd>
            <dt>Event streams open</dt><dd>{formatCount(st?.eventStreams)}</dd>
          </dl>
        </section>
        <section class="card" aria-labelledby="counts-title">
          <h2 id="counts-title">Library</h2>
          <dl class="kv">
            <dt>Records</dt><dd data-testid="record-count">{formatCount(st?.fileCount ?? snap?.stats?.records)}</dd>
            <dt>Files on this node</dt><dd data-testid="own-files">{formatCount(snap?.stats?.files?.count)}</dd>
            <dt>Their total size</dt><dd>{snap?.stats?.files == null ? '—' : formatBytes(snap.stats.files.totalSize)}</dd>
            <dt>Store on disk</dt><dd>{snap?.stats?.redisMemory == null ? '—' : formatBytes(snap.stats.redisMemory)}</dd>
            <dt>Counted</dt><dd>{snap?.stats?.sweptAt == null ? 'counting…' : formatAgo(snap.stats.sweptAt)}</dd>
          </dl>
        </section>
        <WatcherCard watcher={snap?.watcher} />
      </div>
      <MeshPanel />
    </section>
  )
}

function WatcherCard ({ watcher }: { watcher: WatcherStatus | null | undefined }) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const scan = async (): Promise<void> => {
    setBusy(true)
    setError(undefined)
    try {
      await call('POST', '/api/watchers/scan')
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  if (watcher === undefined) return <section class="card"><h2>Watcher</h2><p class="muted">—</p></section>
  if (watcher === null) return <section class="card"><h2>Watcher</h2><p>This node runs without a file watcher.</p></section>
  const p = watcher.progress
  const running = p.phase !== 'idle'
  const pending = p.filesPending ?? 0
  const elapsed = p.startedAt === undefined ? 0 : (Date.now() - new Date(p.startedAt).getTime()) / 1000
  const filesPerSecond = running && elapsed > 0 ? p.filesHashed / elapsed : undefined
  const done = p.filesHashed + pending === 0 ? 1 : p.filesHashed / (p.filesHashed + pending)
  const since = p.sinceScan
  return (
    <section class="card watcher" aria-labelledby="watcher-title">
      <h2 id="watcher-title">Watcher</h2>
      <dl class="kv">
        <dt>State</dt>
        <dd data-testid="watcher-state">
          <span class={`state ${running ? 'busy' : watcher.lastError !== undefined ? 'warn' : watcher.active ? 'ok' : 'off'}`}>
            {running ? p.phase.replace('-', ' ') : watcher.enabled ? (watcher.active ? 'watching' : 'stopped') : 'off (register only)'}
          </span>
        </dd>
        {watcher.lastError !== undefined && <><dt>Last scan failed</dt><dd data-testid="watcher-error"
          class="error">{watcher.lastError.message} <span class="muted">({formatAgo(watcher.lastError.at)})</span></dd></>}
        <dt>Folder</dt><dd><code class="wrap">{watcher.filesPath}</code></dd>
        <dt>Files known</dt><dd data-testid="watcher-files">{formatCount(watcher.fileCount)}</dd>
        <dt>Queue</dt><dd data-testid="watcher-queue">{formatCount(pending)} waiting to settle or be hashed</dd>
        <dt>{running ? 'This scan' : 'Last scan'}</dt>
        <dd data-testid="watcher-scan" title="Files the scan found; those new or changed, hashed, and their size; the bytes read to hash them (a midhash reads at most 1 MiB of a file)">
          {formatCount(p.filesSeen)} files seen, {formatCount(p.filesHashed)} new or changed hashed
          {' '}({formatBytes(p.fileBytesHashed)}, {formatBytes(p.bytesHashed)} read)
          {running && p.etaSeconds !== undefined && <>, about {formatDuration(p.etaSeconds)} left</>}
        </dd>
        {since.filesHashed > 0 &&
          <><dt>Since then</dt><dd data-testid="watcher-since">{formatCount(since.filesHashed)} changes hashed ({formatBytes(since.fileBytesHashed)})</dd></>}
        <dt>Speed</dt><dd>{filesPerSecond === undefined ? '—' : `${filesPerSecond.toFixed(1)} files/s, ${p.mbPerSecond} MB/s read`}</dd>
        <dt>Finished</dt><dd>{watcher.lastScan === undefined ? 'not yet' : <time dateTime={watcher.lastScan}
          title={formatTime(watcher.lastScan)}>{formatAgo(watcher.lastScan)}</time>}</dd>
        <FullHashRow f={watcher.fullHash} />
      </dl>
      {(running || pending > 0) && <progress max={1} value={done} aria-label="Scan progress">{Math.round(done * 100)}%</progress>}
      <button type="button" onClick={() => { void scan() }} disabled={busy || running}>Scan now</button>
      <ErrorNote error={error} />
    </section>
  )
}

/** The background full hash: what it computes, what is left, the rate and the time left, the file being read. */
function FullHashRow ({ f }: { f: FullHashStatus }) {
  const total = f.bytesHashed + f.bytesPending
  const share = total === 0 ? 1 : f.bytesHashed / total
  const head = f.state === 'off'
    ? 'off'
    : f.state === 'idle'
      ? 'up to date'
      : `${formatCount(f.filesPending)} files (${formatBytes(f.bytesPending)}) to go, ${f.state === 'paused' ? 'paused while the watcher scans or hashes' : f.state === 'checking' ? 'checking records' : `${f.mbPerSecond} MB/s`}${f.etaSeconds === undefined ? '' : `, about ${formatDuration(f.etaSeconds)} left`}`
  return (
    <>
      <dt title="Full-content CIDs added to each file's record in the background, after its midhash: sha2-256 and the IPFS CID">Full hashes</dt>
      <dd data-testid="watcher-full-hash">
        {f.algorithms.length > 0 && <span class="muted">{f.algorithms.join(', ')}: </span>}{head}
        {f.state !== 'off' &&
          <div class="muted">
            {formatCount(f.filesHashed)} files ({formatBytes(f.bytesHashed)}) hashed since start, {formatCount(f.filesKnown)} had theirs already
          </div>}
        {f.current !== undefined && <div class="muted">reading <code class="wrap">{f.current.path}</code></div>}
        {f.state !== 'off' && f.state !== 'idle' && <progress max={1} value={share} aria-label="Full hash progress">{Math.round(share * 100)}%</progress>}
      </dd>
    </>
  )
}
