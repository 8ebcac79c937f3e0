import { AbortedError } from '../common/index.js'
import type { StepOutcome } from './lifecycle-writer.js'

export interface ScanCounts {
  added: number
  changed: number
  deleted: number
  renamed: number
}

/** Anything a scan can be waiting for: a candidate or a pending delete. */
export interface Tagged {
  tag: number | undefined
}

interface TagState {
  outstanding: number
  closed: boolean
  counts: ScanCounts
  resolve?: (c: ScanCounts) => void
  reject?: (e: unknown) => void
}

/**
 * Which scan is waiting for which item, and what each scan produced. An item
 * carries at most one tag; a scan completes once its walk is over (`close`)
 * and no item carries its tag any more.
 */
export class ScanTags {
  private readonly tags = new Map<number, TagState>()
  private next = 1

  open (): number {
    const tag = this.next++
    this.tags.set(tag, { outstanding: 0, closed: false, counts: { added: 0, changed: 0, deleted: 0, renamed: 0 } })
    return tag
  }

  /** The scan's walk is done: resolves when every item it tagged is resolved. */
  async close (tag: number): Promise<ScanCounts> {
    const t = this.tags.get(tag)
    if (t === undefined) throw new AbortedError('scan was abandoned')
    return await new Promise<ScanCounts>((resolve, reject) => {
      t.closed = true
      t.resolve = resolve
      t.reject = reject
      this.settle(tag, t)
    })
  }

  /** Forgets a scan (it failed); items still carrying its tag are simply no longer waited for. */
  abandon (tag: number): void {
    this.tags.delete(tag)
  }

  /** Rejects every scan still waiting (stop). */
  abortAll (): void {
    for (const [tag, t] of this.tags) {
      this.tags.delete(tag)
      t.reject?.(new AbortedError('watcher stopped during a scan'))
    }
  }

  /** Some scan still waits for this item. */
  waitedFor (x: Tagged): boolean {
    return x.tag !== undefined && this.tags.has(x.tag)
  }

  set (x: Tagged, tag: number): void {
    const t = this.tags.get(tag)
    if (t === undefined) return
    this.clear(x)
    x.tag = tag
    t.outstanding++
  }

  clear (x: Tagged): void {
    if (x.tag === undefined) return
    const tag = x.tag
    x.tag = undefined
    const t = this.tags.get(tag)
    if (t === undefined) return
    t.outstanding--
    this.settle(tag, t)
  }

  /** Counts an item's outcome for its scan; call before `clear`, which may complete the scan. */
  count (x: Tagged, out: StepOutcome): void {
    if (x.tag === undefined || !out.ok || out.event === undefined) return
    const t = this.tags.get(x.tag)
    if (t === undefined) return
    if (out.event === 'add') t.counts.added++
    else if (out.event === 'change') t.counts.changed++
    else if (out.event === 'delete') t.counts.deleted++
    else t.counts.renamed++
  }

  private settle (tag: number, t: TagState): void {
    if (!t.closed || t.outstanding > 0) return
    this.tags.delete(tag)
    t.resolve?.(t.counts)
  }
}
