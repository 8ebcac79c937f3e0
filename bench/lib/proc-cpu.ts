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

/**
 * CPU ms (user + system) so far in a /proc `stat` file: a process's
 * (`/proc/<pid>/stat`) or a thread's (`/proc/<pid>/task/<tid>/stat`).
 * Throws where it cannot be read.
 */
export function statCpuMs (file: string): number {
  const raw = fs.readFileSync(file, 'utf8')
  // Fields after the command name (which may hold spaces), from the state on: utime and stime are the 12th and 13th.
  const f = raw.slice(raw.lastIndexOf(')') + 2).split(' ')
  return (Number(f[11]) + Number(f[12])) * 1000 / USER_HZ
}

/** CPU ms (user + system) process `pid` used so far, all its threads. */
export function processCpuMs (pid: number): number {
  return statCpuMs(`/proc/${pid}/stat`)
}

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
      out.set(Number(tid), statCpuMs(`/proc/${pid}/task/${tid}/stat`))
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
