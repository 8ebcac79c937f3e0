/**
 * CPU time by thread, from /proc (Linux only): where a process's CPU went
 * while a benchmark's clock ran. Node names none of its threads (every one
 * is `node`), so a thread is told by its id: the main thread's is the
 * process id; of the others, in a node the busiest are search's index
 * writer and the store's checkpointer (worker threads), then V8's helpers.
 */
import fs from 'node:fs'

/** Linux's clock ticks per second for /proc's CPU times (USER_HZ, 100 on every architecture Node runs on there). */
const USER_HZ = 100

/** CPU ms so far of each thread of process `pid` (this one by default), by thread id; empty where /proc is missing. */
export function threadTimes (pid: number | 'self' = 'self'): Map<number, number> {
  const out = new Map<number, number>()
  let tids: string[]
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`)
  } catch {
    return out
  }
  for (const tid of tids) {
    try {
      const raw = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      // Fields after the command name (which may hold spaces), from the state on: utime and stime are the 12th and 13th.
      const f = raw.slice(raw.lastIndexOf(')') + 2).split(' ')
      out.set(Number(tid), (Number(f[11]) + Number(f[12])) * 1000 / USER_HZ)
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out
}

/** What a process's threads used between two readings (ms): its main thread, the others in all, and the others one by one, busiest first. */
export interface ThreadsCpu { main: number, others: number, busiest: number[] }

export function threadsBetween (a: Map<number, number>, b: Map<number, number>, mainTid: number): ThreadsCpu {
  let main = 0
  const others: number[] = []
  for (const [tid, ms] of b) {
    const d = ms - (a.get(tid) ?? 0)
    if (tid === mainTid) main = d
    else if (d > 0) others.push(d)
  }
  others.sort((x, y) => y - x)
  return { main: Math.round(main), others: Math.round(others.reduce((s, x) => s + x, 0)), busiest: others.slice(0, 4).map(Math.round) }
}
