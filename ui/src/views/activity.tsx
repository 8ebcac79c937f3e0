/** The latest changes on this node, live from its event streams; records by title, linked. */
import { useFeed, useStreamStates } from '../live.js'
import { shortId } from '../format.js'
import { useTitles } from './labels.js'

const STATE_TEXT = { connecting: 'connecting…', live: 'live', retrying: 'reconnecting…', unauthorized: 'needs the token' }

export function ActivityFeed () {
  const feed = useFeed()
  const states = useStreamStates()
  // A record by its title (or file name), not its id; the id stays in the link's title.
  const titles = useTitles(feed.filter(a => a.kind === 'meta').map(a => ({ root: a.subject, key: `${a.subject}@${a.at}` })))
  return (
    <section class="feed" aria-labelledby="feed-title">
      <h2 id="feed-title">Activity <span class={`dot ${states.meta}`} title={`changes: ${STATE_TEXT[states.meta]}`}>{STATE_TEXT[states.meta]}</span></h2>
      {feed.length === 0
        ? <p class="muted">No changes since this page opened.</p>
        : (
          <ol class="feed-list">
            {feed.map(a => (
              <li key={`${a.kind}:${a.id}`}>
                <time dateTime={new Date(a.at).toISOString()}>{new Date(a.at).toLocaleTimeString('en-GB')}</time>{' '}
                {a.kind === 'meta'
                  ? <><span class={`tag ${a.type}`}>{a.type === 'del' ? 'deleted' : 'set'}</span> <a href={`/cid/${a.subject}`}
                    title={a.subject}>{titles.get(a.subject) ?? shortId(a.subject, 6)}</a>{a.field !== undefined && <> <code>{a.field}</code></>}</>
                  : <><span class={`tag ${a.type}`}>file {a.type}</span> <span class="path">{a.subject}</span></>}
              </li>
            ))}
          </ol>
          )}
    </section>
  )
}
