/**
 * A join under way (`join` of `/api/mesh`: a fresh node copying a peer's
 * records on the bulk path), as the node reports it: a progress bar over the
 * records the peer said it holds, the share done, the records so far, the
 * rate and the time left at it (`meta-core status` prints the same as a
 * bar line). Without the peer's count the bar is indeterminate and the
 * records so far are shown. Nothing once the join is over.
 */
import { formatCount, formatDuration } from '../format.js'
import type { MeshJoin } from '../wire.js'

export function JoinProgress ({ join }: { join: MeshJoin }) {
  if (!join.active) return null
  const expected = join.expectedRecords !== null && join.expectedRecords > 0 ? join.expectedRecords : undefined
  const share = expected === undefined ? undefined : Math.min(1, join.records / expected)
  const percent = share === undefined ? undefined : Math.floor(share * 100)
  const left = join.secondsLeft === null ? 'time left unknown' : join.secondsLeft < 1 ? 'under a second left' : `about ${formatDuration(join.secondsLeft)} left`
  return (
    <section class="join" aria-labelledby="join-title" data-testid="join">
      <h3 id="join-title">Joining: copying a peer's records</h3>
      <progress max={expected ?? 1} value={expected === undefined ? undefined : Math.min(join.records, expected)} aria-label="Join progress">
        {percent === undefined ? '' : `${percent}%`}
      </progress>
      <p data-testid="join-figures">
        {percent === undefined
          ? <>{formatCount(join.records)} records so far, {formatCount(join.recordsPerSecond)} records/s <span
            class="muted">(the peer did not say how many it holds)</span></>
          : <><strong data-testid="join-percent">{percent} %</strong>: {formatCount(join.records)} of {formatCount(expected)} records,
            {' '}{formatCount(join.recordsPerSecond)} records/s, <span data-testid="join-left">{left}</span></>}
      </p>
      <p class="muted">The library fills in as records arrive; searches answer meanwhile, slower while search builds its index.</p>
    </section>
  )
}
