/**
 * The flags a start-over of the store's WAL (checkpointer.ts) shares with
 * the threads that use the store: one SharedArrayBuffer of Int32 slots.
 *
 * - HOLD_WRITERS: set while the RESTART (or TRUNCATE) checkpoint runs.
 *   The group commit keeps queued writes back meanwhile (group-commit.ts),
 *   so the checkpoint gets the write lock once the transaction running now
 *   commits.
 * - HOLD_READERS: set for the whole start-over. A reader that takes part
 *   (a side file: search's index writer) begins no transaction meanwhile.
 * - READERS_INSIDE: how many such readers are in a transaction now.
 *
 * A start-over sets HOLD_READERS, waits until READERS_INSIDE is 0, and
 * only then sets HOLD_WRITERS: writers go on while the readers finish the
 * transactions they are in (a batch of the index writer may take a few
 * hundred ms), and are held back only for the RESTART's last copy.
 *
 * A reader adds itself to READERS_INSIDE before it looks at HOLD_READERS,
 * and the start-over sets HOLD_READERS before it looks at READERS_INSIDE
 * (both sequentially consistent): so either the reader sees the hold and
 * steps back out, or the start-over sees the reader and waits for it. A
 * reader never waits on the start-over for longer than `maxWaitMs`, and a
 * start-over gives up on a reader after its own limit: neither can stall
 * the other for good.
 */

export const HOLD_WRITERS = 0
export const HOLD_READERS = 1
export const READERS_INSIDE = 2
const SLOTS = 3

/** A new set of flags, all clear. */
export function newWalHold (): Int32Array {
  return new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT))
}

/**
 * For a reader on any thread, before its transaction begins: waits while a
 * start-over holds readers off (at most `maxWaitMs`, then goes in anyway),
 * and counts the reader in. Pair with leaveRead.
 */
export function enterRead (hold: Int32Array, maxWaitMs: number): void {
  const until = Date.now() + maxWaitMs
  for (;;) {
    Atomics.add(hold, READERS_INSIDE, 1)
    if (Atomics.load(hold, HOLD_READERS) === 0) return
    // A start-over is under way: step back out, so that it need not wait for this reader, until it ends.
    leaveRead(hold)
    const left = until - Date.now()
    if (left <= 0) {
      Atomics.add(hold, READERS_INSIDE, 1)
      return
    }
    Atomics.wait(hold, HOLD_READERS, 1, left)
  }
}

/** For a reader whose transaction has ended (committed or not): counts it out, and wakes a start-over waiting for it. */
export function leaveRead (hold: Int32Array): void {
  Atomics.sub(hold, READERS_INSIDE, 1)
  Atomics.notify(hold, READERS_INSIDE)
}

/** Clears both holds and wakes whoever waits on them (a start-over that ended, or a worker that died holding). */
export function releaseHolds (hold: Int32Array): void {
  Atomics.store(hold, HOLD_WRITERS, 0)
  Atomics.store(hold, HOLD_READERS, 0)
  Atomics.notify(hold, HOLD_WRITERS)
  Atomics.notify(hold, HOLD_READERS)
}
