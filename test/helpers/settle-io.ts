/**
 * What a virtual-time test awaits between two timers: the real work the
 * last one started (a stat, a hash's reads, a folder's walk, a store's group
 * commit on `setImmediate`) and everything that work led to. The process is
 * settled when it has no file-system request and no immediate pending:
 * promise continuations run between two turns of the event loop, so a chain
 * of I/O is followed to its end, turn by turn, without a wall-clock wait.
 * Sockets, worker threads and real timers are not awaited (a virtual-time
 * test has none in its path).
 */

/** Resource kinds (process.getActiveResourcesInfo) that are I/O under way. */
const PENDING = new Set(['FSReqCallback', 'FSReqPromise', 'FileHandleCloseReq', 'CloseReq', 'Immediate'])

/** A test whose I/O never settles fails after this long rather than hanging. */
const DEADLINE_MS = 20_000

export async function settleIo (): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS
  for (;;) {
    await new Promise<void>(resolve => { setImmediate(resolve) })
    const pending = process.getActiveResourcesInfo().filter(r => PENDING.has(r))
    if (pending.length === 0) return
    if (Date.now() > deadline) throw new Error(`file I/O still under way after ${DEADLINE_MS} ms: ${pending.join(', ')}`)
  }
}
