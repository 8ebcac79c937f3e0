/**
 * The protocol a start-over of the store's WAL (checkpoint-worker.ts)
 * follows with the threads that use the store, as one class over one
 * SharedArrayBuffer of Int32 slots. Every thread wraps the same buffer in
 * its own WalHold (`WalHold.of(buffer)`); the roles:
 *
 * - the start-over (the checkpointer's thread): `holdReaders()`,
 *   `waitReadersOut(until)`, then `holdWriters()` for the RESTART (or
 *   TRUNCATE) checkpoint, and `release()` at the end, whatever happened;
 * - writers (group-commit.ts, through the Checkpointer): `writersHeld()`,
 *   polled before each group commit; queued writes wait meanwhile, so the
 *   checkpoint gets the write lock once the transaction running now commits;
 * - readers that take part (a side file: search's index writer):
 *   `enterRead(slot)` before each transaction, `leaveRead(slot)` after it;
 * - a reader's owner (the thread that starts the reader's thread):
 *   `acquireReaderSlot()` before, `releaseReaderSlot(slot)` once the thread
 *   is gone, whatever way it went: a thread terminated inside a transaction
 *   never runs the code that marks it out, and a slot left marked in would
 *   make every later start-over wait for a reader that no longer exists.
 *
 * Layout: HOLD_WRITERS (1 while the last checkpoint runs), HOLD_READERS (1
 * for the whole start-over), READERS_TAKEN (a bit per taken slot), then
 * READER_SLOTS slots from FIRST_READER on (1 while that reader is in a
 * transaction).
 *
 * A start-over sets HOLD_READERS, waits until every reader slot is 0, and
 * only then sets HOLD_WRITERS: writers go on while readers finish the
 * transactions they are in (a batch of the index writer may take a few
 * hundred ms), and are held back only for the last copy. A reader sets its
 * slot before it looks at HOLD_READERS, and the start-over sets
 * HOLD_READERS before it looks at the slots (both sequentially
 * consistent): either the reader sees the hold and steps back out, or the
 * start-over sees the reader and waits for it. A reader never waits longer
 * than its `maxWaitMs`, and a start-over gives up on a reader at its own
 * limit: neither can stall the other for good.
 */

const HOLD_WRITERS = 0
export const HOLD_READERS = 1
export const READERS_TAKEN = 2
const FIRST_READER = 3
/** Readers that can take part at once (a store has one: search's index writer; a thread that replaces it takes another while the first ends). */
export const READER_SLOTS = 8
const SLOTS = FIRST_READER + READER_SLOTS

export class WalHold {
  private constructor (private readonly a: Int32Array) {}

  /** A new set of flags, all clear. */
  static create (): WalHold {
    return new WalHold(new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT)))
  }

  /** The same flags, seen from another thread (the buffer came through workerData). */
  static of (buffer: SharedArrayBuffer): WalHold {
    if (buffer.byteLength !== SLOTS * Int32Array.BYTES_PER_ELEMENT) throw new RangeError(`not a WAL hold buffer: ${buffer.byteLength} bytes`)
    return new WalHold(new Int32Array(buffer))
  }

  /** What to hand another thread. */
  get buffer (): SharedArrayBuffer {
    return this.a.buffer as SharedArrayBuffer
  }

  // ------------------------------------------------------------ owners

  /** A free reader slot, now taken, or undefined when every one is taken. */
  acquireReaderSlot (): number | undefined {
    for (;;) {
      const taken = Atomics.load(this.a, READERS_TAKEN)
      let bit = 0
      while (bit < READER_SLOTS && (taken & (1 << bit)) !== 0) bit++
      if (bit === READER_SLOTS) return undefined
      if (Atomics.compareExchange(this.a, READERS_TAKEN, taken, taken | (1 << bit)) === taken) {
        Atomics.store(this.a, FIRST_READER + bit, 0)
        return FIRST_READER + bit
      }
    }
  }

  /** Gives a slot back once its reader is gone: marks it out, wakes a start-over waiting for it, frees the slot. */
  releaseReaderSlot (slot: number): void {
    checkSlot(slot)
    this.leaveRead(slot)
    Atomics.and(this.a, READERS_TAKEN, ~(1 << (slot - FIRST_READER)))
  }

  /** Slots taken now (for tests and diagnostics). */
  takenSlots (): number {
    let n = 0
    for (let bits = Atomics.load(this.a, READERS_TAKEN); bits !== 0; bits &= bits - 1) n++
    return n
  }

  // ------------------------------------------------------------ readers

  /**
   * Before the reader's transaction begins: waits while a start-over holds
   * readers off (at most `maxWaitMs`, then goes in anyway), and marks the
   * reader in. Pair with leaveRead.
   */
  enterRead (slot: number, maxWaitMs: number): void {
    checkSlot(slot)
    const until = Date.now() + maxWaitMs
    for (;;) {
      Atomics.store(this.a, slot, 1)
      if (Atomics.load(this.a, HOLD_READERS) === 0) return
      // A start-over is under way: step back out, so that it need not wait for this reader, until it ends.
      this.leaveRead(slot)
      const left = until - Date.now()
      if (left <= 0) {
        Atomics.store(this.a, slot, 1)
        return
      }
      Atomics.wait(this.a, HOLD_READERS, 1, left)
    }
  }

  /** Once the reader's transaction has ended (committed or not): marks it out and wakes a start-over waiting for it. */
  leaveRead (slot: number): void {
    Atomics.store(this.a, slot, 0)
    Atomics.notify(this.a, slot)
  }

  /** True when no reader is in a transaction. */
  readersOut (): boolean {
    for (let i = FIRST_READER; i < SLOTS; i++) if (Atomics.load(this.a, i) !== 0) return false
    return true
  }

  // ------------------------------------------------------------ the start-over

  /** Step 2: readers that take part begin no transaction until release(). */
  holdReaders (): void {
    Atomics.store(this.a, HOLD_READERS, 1)
  }

  /** Step 3: waits until no reader is in a transaction, or `until` (a Date.now() time) passes; true when none is. */
  waitReadersOut (until: number): boolean {
    // A reader that finds the hold set steps back out at once; the look at every slot is repeated until none is in.
    while (!this.readersOut() && Date.now() < until) {
      for (let i = FIRST_READER; i < SLOTS && Date.now() < until; i++) {
        if (Atomics.load(this.a, i) !== 0) Atomics.wait(this.a, i, 1, Math.max(1, until - Date.now()))
      }
    }
    return this.readersOut()
  }

  /** Step 4: writers hold off (only once readers are out). */
  holdWriters (): void {
    Atomics.store(this.a, HOLD_WRITERS, 1)
  }

  /** Writers let go again (the last checkpoint ended); readers stay held until release(). */
  releaseWriters (): void {
    Atomics.store(this.a, HOLD_WRITERS, 0)
    Atomics.notify(this.a, HOLD_WRITERS)
  }

  /** True while writers are held (group-commit.ts polls it). */
  writersHeld (): boolean {
    return Atomics.load(this.a, HOLD_WRITERS) !== 0
  }

  /** True while readers are held. */
  readersHeld (): boolean {
    return Atomics.load(this.a, HOLD_READERS) !== 0
  }

  /** Step 5, and the teardown of a worker that died holding: clears both holds and wakes whoever waits on them. */
  release (): void {
    this.releaseWriters()
    Atomics.store(this.a, HOLD_READERS, 0)
    Atomics.notify(this.a, HOLD_READERS)
  }
}

function checkSlot (slot: number): void {
  if (!Number.isInteger(slot) || slot < FIRST_READER || slot >= SLOTS) throw new RangeError(`not a reader slot: ${slot}`)
}
