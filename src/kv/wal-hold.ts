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
 * - READER_SLOTS reader slots from FIRST_READER on, one per reader that
 *   takes part: 1 while it is in a transaction, else 0. A reader's owner
 *   takes a slot for it (acquireReaderSlot) and gives it back once the
 *   reader is gone (releaseReaderSlot), whatever way it went: a thread
 *   terminated inside a transaction never runs the code that would count
 *   it out, and a count it left behind would make every later start-over
 *   wait for a reader that no longer exists.
 * - READERS_TAKEN: which reader slots are taken (a bit each).
 *
 * A start-over sets HOLD_READERS, waits until every reader slot is 0, and
 * only then sets HOLD_WRITERS: writers go on while the readers finish the
 * transactions they are in (a batch of the index writer may take a few
 * hundred ms), and are held back only for the RESTART's last copy.
 *
 * A reader sets its slot before it looks at HOLD_READERS, and the
 * start-over sets HOLD_READERS before it looks at the slots (both
 * sequentially consistent): so either the reader sees the hold and steps
 * back out, or the start-over sees the reader and waits for it. A reader
 * never waits on the start-over for longer than `maxWaitMs`, and a
 * start-over gives up on a reader after its own limit: neither can stall
 * the other for good.
 */

export const HOLD_WRITERS = 0
export const HOLD_READERS = 1
export const READERS_TAKEN = 2
export const FIRST_READER = 3
/** Readers that can take part at once (a store has one: search's index writer; a thread that replaces it takes another while the first ends). */
export const READER_SLOTS = 8
const SLOTS = FIRST_READER + READER_SLOTS

/** A new set of flags, all clear. */
export function newWalHold (): Int32Array {
  return new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT))
}

/** A free reader slot, now taken (its index in `hold`), or undefined when every one is taken. */
export function acquireReaderSlot (hold: Int32Array): number | undefined {
  for (;;) {
    const taken = Atomics.load(hold, READERS_TAKEN)
    let bit = 0
    while (bit < READER_SLOTS && (taken & (1 << bit)) !== 0) bit++
    if (bit === READER_SLOTS) return undefined
    if (Atomics.compareExchange(hold, READERS_TAKEN, taken, taken | (1 << bit)) === taken) {
      Atomics.store(hold, FIRST_READER + bit, 0)
      return FIRST_READER + bit
    }
  }
}

/**
 * Gives a reader's slot back once the reader is gone (its thread ended,
 * normally or terminated): marks it out of any transaction, wakes a
 * start-over waiting for it, and frees the slot.
 */
export function releaseReaderSlot (hold: Int32Array, slot: number): void {
  checkSlot(slot)
  Atomics.store(hold, slot, 0)
  Atomics.notify(hold, slot)
  Atomics.and(hold, READERS_TAKEN, ~(1 << (slot - FIRST_READER)))
}

/**
 * For the reader in `slot`, before its transaction begins: waits while a
 * start-over holds readers off (at most `maxWaitMs`, then goes in anyway),
 * and marks the reader in. Pair with leaveRead.
 */
export function enterRead (hold: Int32Array, slot: number, maxWaitMs: number): void {
  checkSlot(slot)
  const until = Date.now() + maxWaitMs
  for (;;) {
    Atomics.store(hold, slot, 1)
    if (Atomics.load(hold, HOLD_READERS) === 0) return
    // A start-over is under way: step back out, so that it need not wait for this reader, until it ends.
    leaveRead(hold, slot)
    const left = until - Date.now()
    if (left <= 0) {
      Atomics.store(hold, slot, 1)
      return
    }
    Atomics.wait(hold, HOLD_READERS, 1, left)
  }
}

/** For the reader in `slot`, once its transaction has ended (committed or not): marks it out, and wakes a start-over waiting for it. */
export function leaveRead (hold: Int32Array, slot: number): void {
  Atomics.store(hold, slot, 0)
  Atomics.notify(hold, slot)
}

/** True when no reader is in a transaction. */
export function readersOut (hold: Int32Array): boolean {
  for (let i = FIRST_READER; i < FIRST_READER + READER_SLOTS; i++) if (Atomics.load(hold, i) !== 0) return false
  return true
}

/** Clears both holds and wakes whoever waits on them (a start-over that ended, or a worker that died holding). */
export function releaseHolds (hold: Int32Array): void {
  Atomics.store(hold, HOLD_WRITERS, 0)
  Atomics.store(hold, HOLD_READERS, 0)
  Atomics.notify(hold, HOLD_WRITERS)
  Atomics.notify(hold, HOLD_READERS)
}

function checkSlot (slot: number): void {
  if (!Number.isInteger(slot) || slot < FIRST_READER || slot >= FIRST_READER + READER_SLOTS) throw new RangeError(`not a reader slot: ${slot}`)
}
