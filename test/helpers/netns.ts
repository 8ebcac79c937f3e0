/**
 * Homes behind NAT on one machine, in Linux network namespaces the test
 * makes and removes (as root; the recipe and its pitfalls are in the shared
 * design's netns.md):
 *
 *                  [wan]  a bridge: the "internet", 10.77.0.0/24
 *            /      |       |       \
 *     [relay]  [stranger]  [rtr-a]  [rtr-b]     routers masquerade lan0 -> wan0
 *     .1        .9          .11 |    .12 |
 *                            [lan0]   [lan0]     a bridge in each router: the home, 192.168.77.0/24 both
 *                           a1 a2 a3   b1 b2     .10 .11 .12, default route via .1
 *
 * Every address exists only inside these namespaces: nothing is routed to
 * the machine's own interfaces and no packet leaves them (veth pairs are
 * made straight inside their namespaces). A node's HTTP API listens on
 * 127.0.0.1 inside its namespace; the test reaches it through a small
 * forwarder in that namespace on a unix socket (path sockets are not
 * namespaced).
 *
 * Names carry a prefix with the test process's pid (`mch<pid>-`), so runs
 * at once do not meet, and namespaces a crashed run left (its pid gone) are
 * removed at the next start.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import http from 'node:http'
import path from 'node:path'
import { waitFor } from '../../src/common/index.js'
import { runNodeScript, type Cli } from './node-cli.js'

const FAMILY = 'mch'
export const WAN = '10.77.0'
export const LAN = '192.168.77'

/** Why namespaces cannot be made here (the test then skips, saying this), or undefined. */
export function netnsProblem (): string | undefined {
  if (process.platform !== 'linux') return 'network namespaces need Linux'
  if (process.getuid?.() !== 0) return 'network namespaces need root (CI runs as root)'
  for (const [bin, pkg] of [['ip', 'iproute2'], ['nft', 'nftables']]) {
    if (spawnSync(bin, ['-V'], { stdio: 'ignore' }).error !== undefined && spawnSync(bin, ['--version'], { stdio: 'ignore' }).error !== undefined) return `${bin} is missing (Debian package ${pkg}; .ci/run installs it)`
  }
  const probe = `${FAMILY}${process.pid}-probe`
  const r = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' })
  if (r.status !== 0) return `cannot make a network namespace: ${(r.stderr ?? '').trim()}`
  spawnSync('ip', ['netns', 'del', probe])
  return undefined
}

/** Removes namespaces of this family whose run (pid) is gone. */
function removeLeftovers (): void {
  const list = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
  for (const line of list.split('\n')) {
    const name = line.split(' ')[0]
    const m = new RegExp(`^${FAMILY}(\\d+)-`).exec(name)
    if (m === null || alive(Number(m[1]))) continue
    spawnSync('ip', ['netns', 'pids', name], { encoding: 'utf8' }).stdout?.split('\n').filter(Boolean).forEach(pid => { try { process.kill(Number(pid),
      'SIGKILL') } catch {} })
    spawnSync('ip', ['netns', 'del', name])
  }
}

function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

const ip = (...args: string[]): void => { execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] }) }

/** The NAT of a home router: masquerade out of wan0, and nothing in from it but replies. */
const ROUTER_RULES = `table ip nat {
 chain postrouting {
  type nat hook postrouting priority srcnat;
  oifname "wan0" masquerade
 }
}
table inet fw {
 chain forward {
  type filter hook forward priority filter; policy drop;
  ct state established,related accept
  iifname "lan0" oifname "wan0" accept
  iifname "lan0" oifname "lan0" accept
 }
}
`

/** Forwards a unix socket to 127.0.0.1:<port> inside a namespace (plain JavaScript: no loader to start). */
const FORWARDER = `const net = require('node:net'); const fs = require('node:fs'); const [sock, port] = process.argv.slice(1);
try { fs.unlinkSync(sock) } catch {}
net.createServer(c => {
  const u = net.connect(Number(port), '127.0.0.1'); c.pipe(u); u.pipe(c); u.on('error', () => c.destroy()); c.on('error', () => u.destroy())
}).listen(sock, () => { process.stdout.write('listening\\n') })`

export type Host = 'relay' | 'stranger' | 'a1' | 'a2' | 'a3' | 'b1' | 'b2'

const HOSTS: Record<Host, { net: 'wan' | 'a' | 'b', addr: string }> = {
  relay: { net: 'wan', addr: `${WAN}.1` },
  stranger: { net: 'wan', addr: `${WAN}.9` },
  a1: { net: 'a', addr: `${LAN}.10` },
  a2: { net: 'a', addr: `${LAN}.11` },
  a3: { net: 'a', addr: `${LAN}.12` },
  b1: { net: 'b', addr: `${LAN}.10` },
  b2: { net: 'b', addr: `${LAN}.11` }
}

export class HomesNet {
  readonly prefix = `${FAMILY}${process.pid}-`
  private readonly made: string[] = []
  private readonly procs: Cli[] = []

  constructor (readonly dir: string) {}

  ns (name: string): string {
    return this.prefix + name
  }

  addr (host: Host): string {
    return HOSTS[host].addr
  }

  /** Makes the namespaces, links, addresses, routes and NAT. */
  build (): void {
    removeLeftovers()
    for (const n of ['wan', 'rtr-a', 'rtr-b', ...Object.keys(HOSTS)]) {
      ip('netns', 'add', this.ns(n))
      this.made.push(this.ns(n))
      ip('-n', this.ns(n), 'link', 'set', 'lo', 'up')
    }
    const wan = this.ns('wan')
    ip('-n', wan, 'link', 'add', 'br0', 'type', 'bridge')
    ip('-n', wan, 'link', 'set', 'br0', 'up')
    let port = 0
    const plug = (ns: string, ifname: string, bridgeNs: string, bridge: string, cidr: string): void => {
      const p = `p${port++}`
      ip('-n', ns, 'link', 'add', ifname, 'type', 'veth', 'peer', 'name', p, 'netns', bridgeNs)
      ip('-n', bridgeNs, 'link', 'set', p, 'master', bridge, 'up')
      ip('-n', ns, 'addr', 'add', cidr, 'dev', ifname)
      ip('-n', ns, 'link', 'set', ifname, 'up')
    }
    for (const home of ['a', 'b'] as const) {
      const rtr = this.ns(`rtr-${home}`)
      plug(rtr, 'wan0', wan, 'br0', `${WAN}.${home === 'a' ? 11 : 12}/24`)
      ip('-n', rtr, 'link', 'add', 'lan0', 'type', 'bridge')
      ip('-n', rtr, 'addr', 'add', `${LAN}.1/24`, 'dev', 'lan0')
      ip('-n', rtr, 'link', 'set', 'lan0', 'up')
      execFileSync('ip', ['netns', 'exec', rtr, 'sysctl', '-qw', 'net.ipv4.ip_forward=1'])
      // Where br_netfilter is loaded (Docker loads it), frames bridged inside the home pass the router's forward
      // chain too: the home's own traffic (mDNS, node to node) must not meet its policy.
      spawnSync('ip', ['netns', 'exec', rtr, 'sysctl', '-qw', 'net.bridge.bridge-nf-call-iptables=0'], { stdio: 'ignore' })
      execFileSync('ip', ['netns', 'exec', rtr, 'nft', '-f', '-'], { input: ROUTER_RULES })
    }
    for (const [host, h] of Object.entries(HOSTS)) {
      const ns = this.ns(host)
      if (h.net === 'wan') {
        plug(ns, 'eth0', wan, 'br0', `${h.addr}/24`)
      } else {
        plug(ns, 'eth0', this.ns(`rtr-${h.net}`), 'lan0', `${h.addr}/24`)
        ip('-n', ns, 'route', 'add', 'default', 'via', `${LAN}.1`)
      }
    }
  }

  /** `node <argv…>` inside a host's namespace (ip netns exec execs it: the child is the node process). */
  run (host: Host, argv: string[], env: Record<string, string> = {}): Cli {
    const cli = runNodeScript(argv, env, { wrap: ['ip', 'netns', 'exec', this.ns(host)] })
    this.procs.push(cli)
    return cli
  }

  /** A unix socket in `dir` that reaches 127.0.0.1:<port> inside the host's namespace. */
  async forward (host: Host, port: number): Promise<string> {
    const sock = path.join(this.dir, `${host}-${port}.sock`)
    const cli = this.run(host, ['-e', FORWARDER, sock, String(port)])
    // The socket file appears at bind, a moment before it accepts: wait for the forwarder to say it listens.
    await waitFor(() => cli.stdout().includes('listening') || cli.child.exitCode !== null, { timeoutMs: 10_000, what: `the forwarder of ${host}` })
    if (cli.child.exitCode !== null) throw new Error(`the forwarder of ${host} exited: ${cli.stderr()}`)
    return sock
  }

  /** Kills what runs in the namespaces and removes them (also after a failure). */
  async destroy (): Promise<void> {
    for (const c of this.procs.splice(0)) {
      if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL')
      await c.exited
    }
    for (const ns of this.made.splice(0).reverse()) {
      const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout ?? ''
      for (const pid of pids.split('\n').filter(Boolean)) { try { process.kill(Number(pid), 'SIGKILL') } catch {} }
      spawnSync('ip', ['netns', 'del', ns])
    }
  }
}

/**
 * One namespace with one LAN address on an interface of its own (and no way out):
 * enough for a process that needs a private, non-loopback address of its own.
 */
export class LanHost {
  readonly ns = `${FAMILY}${process.pid}-lan${Math.floor(Math.random() * 1e6)}`
  private readonly procs: Cli[] = []

  build (cidr = `${LAN}.10/24`): void {
    removeLeftovers()
    ip('netns', 'add', this.ns)
    ip('-n', this.ns, 'link', 'set', 'lo', 'up')
    // A veth pair with both ends inside (the dummy driver is not in every kernel).
    ip('-n', this.ns, 'link', 'add', 'd0', 'type', 'veth', 'peer', 'name', 'd1')
    ip('-n', this.ns, 'addr', 'add', cidr, 'dev', 'd0')
    ip('-n', this.ns, 'link', 'set', 'd0', 'up')
    ip('-n', this.ns, 'link', 'set', 'd1', 'up')
  }

  run (argv: string[], env: Record<string, string> = {}): Cli {
    const cli = runNodeScript(argv, env, { wrap: ['ip', 'netns', 'exec', this.ns] })
    this.procs.push(cli)
    return cli
  }

  async destroy (): Promise<void> {
    for (const c of this.procs.splice(0)) {
      if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL')
      await c.exited
    }
    spawnSync('ip', ['netns', 'del', this.ns])
  }
}

export interface Reply { status: number, headers: http.IncomingHttpHeaders, body: Buffer }

/** An HTTP request to a node through its forwarder's socket. */
export async function sockRequest (sock: string, method: string, url: string, opts: { body?: unknown, headers?: Record<string, string>,
  timeoutMs?: number } = {}): Promise<Reply> {
  const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body))
  return await new Promise((resolve, reject) => {
    const req = http.request({ socketPath: sock, method, path: url, headers: { ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
      ...opts.headers }, timeout: opts.timeoutMs ?? 30_000 }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (b: Buffer) => parts.push(b))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }) })
      res.on('error', reject)
    })
    req.on('timeout', () => { req.destroy(new Error(`${method} ${url}: no answer`)) })
    req.on('error', reject)
    req.end(payload)
  })
}

export async function sockJson<T = any> (sock: string, method: string, url: string, body?: unknown): Promise<{ status: number, body: T }> {
  const r = await sockRequest(sock, method, url, { body })
  const text = r.body.toString()
  return { status: r.status, body: (text === '' ? undefined : JSON.parse(text)) as T }
}
