/**
 * The parent's side of bench/lib/join-host.ts: starts a node in a child
 * process, waits for its ready line, sends it commands and stops it.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process'
import path from 'node:path'
import readline from 'node:readline'
import type { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import type { LogLevel } from '../../src/common/index.js'
import type { HostReady, HostSpec, HostStatus, PeerFigures } from './join-host.js'

const HOST = path.join(path.dirname(fileURLToPath(import.meta.url)), 'join-host.ts')
const ROOT = path.resolve(path.dirname(HOST), '../..')

export class NodeProc {
  private nextId = 1
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void, reject: (e: Error) => void }>()
  private readonly exited: Promise<void>

  private constructor (private readonly child: ChildProcessByStdio<Writable, Readable, null>, readonly spec: HostSpec, readonly ready: HostReady) {
    this.exited = new Promise(resolve => { child.once('exit', () => { resolve() }) })
    child.once('exit', code => {
      for (const w of this.waiting.values()) w.reject(new Error(`${spec.label} exited (${String(code)})`))
      this.waiting.clear()
    })
  }

  /**
   * Starts the node and resolves once it printed its ready line. JOIN_PEER_NODE_ARGS: more node flags for every
   * child (e.g. --cpu-prof); JOIN_NODE_LOG: the children's log level (default warn).
   */
  static async start (spec: HostSpec): Promise<NodeProc> {
    if (spec.logLevel === undefined && process.env.JOIN_NODE_LOG !== undefined) spec = { ...spec, logLevel: process.env.JOIN_NODE_LOG as LogLevel }
    const extra = (process.env.JOIN_PEER_NODE_ARGS ?? '').split(' ').filter(a => a !== '')
    const child = spawn(process.execPath, [...extra, '--import', 'tsx', HOST, JSON.stringify(spec)],
      { cwd: ROOT, env: { ...process.env }, stdio: ['pipe', 'pipe', 'inherit'] })
    const rl = readline.createInterface({ input: child.stdout })
    let proc: NodeProc | undefined
    return await new Promise<NodeProc>((resolve, reject) => {
      rl.on('line', line => {
        let m: { ready?: HostReady, id?: number, result?: unknown, error?: string }
        try {
          m = JSON.parse(line)
        } catch {
          process.stderr.write(`${spec.label}: ${line}\n`)
          return
        }
        if (m.ready !== undefined) {
          proc = new NodeProc(child, spec, m.ready)
          resolve(proc)
        } else if (m.id !== undefined && proc !== undefined) {
          const w = proc.waiting.get(m.id)
          proc.waiting.delete(m.id)
          if (m.error !== undefined) w?.reject(new Error(`${spec.label}: ${m.error}`))
          else w?.resolve(m.result)
        }
      })
      child.once('exit', code => { if (proc === undefined) reject(new Error(`${spec.label} exited (${String(code)}) before it was ready`)) })
    })
  }

  get peerId (): string { return this.ready.peerId }

  /** Its process id (for its CPU time, bench/lib/proc-cpu.ts). */
  get pid (): number { return this.child.pid ?? 0 }

  /** Its libp2p TCP port (from its listening address). */
  get port (): number { return Number(/\/tcp\/(\d+)/.exec(this.ready.addr)?.[1]) }

  async call<T = unknown> (cmd: string, args?: unknown): Promise<T> {
    const id = this.nextId++
    return await new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: v => { resolve(v as T) }, reject })
      this.child.stdin.write(JSON.stringify({ id, cmd, args }) + '\n')
    })
  }

  async status (): Promise<HostStatus> { return await this.call<HostStatus>('status') }

  /** Its figures for one peer (undefined: it has none for that peer). */
  async peer (peerId: string): Promise<PeerFigures | undefined> {
    return (await this.status()).peers.find(p => p.peerId === peerId)
  }

  async stop (): Promise<void> {
    if (this.child.exitCode !== null) return
    this.child.stdin.write(JSON.stringify({ id: 0, cmd: 'stop' }) + '\n')
    await Promise.race([this.exited, new Promise(resolve => setTimeout(resolve, 30_000))])
    if (this.child.exitCode === null) this.child.kill('SIGKILL')
    await this.exited
  }
}
