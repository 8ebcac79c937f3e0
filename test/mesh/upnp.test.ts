/**
 * The router's port mapping (META_CORE_UPNP) through @libp2p/upnp-nat, with
 * a fake port-mapping client (test/helpers/upnp-node.ts, the network edge):
 * the node's LAN address is mapped and the router's external address
 * announced, the mapping is asked for again before its lifetime ends and
 * removed when the node stops; behind a double NAT (the router's own
 * external address private) nothing is mapped and the node says so once,
 * in its log and its status, with what to do. upnp-nat maps only private,
 * non-loopback addresses: the node runs in a network namespace with one
 * (skipped with one line where namespaces cannot be made).
 */
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/common/index.js'
import { LanHost, LAN, netnsProblem } from '../helpers/netns.js'

const problem = netnsProblem()
if (problem !== undefined) console.log(`test/mesh/upnp.test.ts skipped: ${problem}`)
const HELPER = path.resolve(import.meta.dirname, '../helpers/upnp-node.ts')
const hosts: LanHost[] = []
afterEach(async () => { for (const h of hosts.splice(0)) await h.destroy() })

/** Runs the helper in a namespace of its own; returns its steps as they come and a way to stop it. */
function node (external: string, ttlMs: number): { steps: () => any[], stop: () => Promise<any[]> } {
  const host = new LanHost()
  hosts.push(host)
  host.build()
  const cli = host.run(['--import', 'tsx', HELPER, `/ip4/${LAN}.10/tcp/4001`, external, String(ttlMs)])
  const steps = (): any[] => cli.stdout().split('\n').filter(Boolean).map(l => JSON.parse(l))
  return {
    steps,
    stop: async () => {
      cli.child.kill('SIGTERM')
      await cli.exited
      return steps()
    }
  }
}

describe.skipIf(problem !== undefined)('UPnP port mapping (fake router)', () => {
  it('maps the LAN address, announces the router\'s, renews it before it ends and removes it at stop', async () => {
    // A public address, as the fake router gives it (documentation ranges count as private to libp2p; nothing is sent anywhere).
    const n = node('5.9.0.1', 3_000)
    await waitFor(() => n.steps().some(s => s.event === 'renewed' || s.event === 'error' || s.event === 'failed'),
      { timeoutMs: 40_000, what: 'the mapping made and renewed' })
    const mapped = n.steps().find(s => s.event === 'mapped')
    expect(mapped, JSON.stringify(n.steps())).toBeDefined()
    expect(mapped.view).toMatchObject({ reachability: 'mapped', upnp: { state: 'mapped', problem: null,
      mappings: [{ internal: `${LAN}.10:4001`, external: '5.9.0.1:14001', protocol: 'TCP' }] } })
    expect(mapped.addrs.some((a: string) => a.startsWith('/ip4/5.9.0.1/tcp/14001/p2p/'))).toBe(true)
    // upnp-on with a mapping: the node relays for members behind NAT (relay auto), and holds its reservations anyway.
    expect(mapped.view.relay).toMatchObject({ serving: true })
    const renewed = n.steps().find(s => s.event === 'renewed')
    const maps = renewed.calls.filter((c: any) => c.op === 'map')
    expect(maps[0]).toMatchObject({ internalPort: 4001, internalHost: `${LAN}.10`, ttl: 3_000, autoRefresh: false })
    // Asked for again before the lifetime ends (its last 1.5 s), not after.
    expect(maps[1].at - maps[0].at).toBeGreaterThan(1_000)
    expect(maps[1].at - maps[0].at).toBeLessThan(3_000)
    const stopped = (await n.stop()).find(s => s.event === 'stopped')
    expect(stopped.calls.filter((c: any) => c.op !== 'externalIp').slice(-2)).toEqual([{ op: 'unmap', internalPort: 4001 }, { op: 'stop' }])
    expect(stopped.warnings).toEqual([])
  }, 60_000)

  it('says once, in the log and in status, that a double NAT cannot be mapped, and what to do', async () => {
    const n = node('10.64.0.1', 3_000)
    await waitFor(() => n.steps().some(s => s.event === 'failed' || s.event === 'error'), { timeoutMs: 40_000, what: 'the mapping to fail' })
    const failed = n.steps().find(s => s.event === 'failed')
    expect(failed, JSON.stringify(n.steps())).toBeDefined()
    expect(failed.view.reachability).toBe('lan-only')
    expect(failed.view.upnp.state).toBe('failed')
    expect(failed.view.upnp.problem).toContain('10.64.0.1 is itself private: this home is behind two NATs')
    expect(failed.view.upnp.problem).toContain('META_CORE_ANNOUNCE')
    // The router's address is checked again (every 300 ms here), three times more; the warning is not said again.
    const checks = (): number => Math.max(0, ...n.steps().filter(s => s.event === 'checked').map(s => s.checks as number))
    const first = checks()
    await waitFor(() => checks() >= first + 3, { timeoutMs: 10_000, what: 'the router\'s address checked three times more' })
    const stopped = (await n.stop()).find(s => s.event === 'stopped')
    expect(stopped.calls.filter((c: any) => c.op === 'map')).toEqual([])
    expect(stopped.warnings).toHaveLength(1)
    expect(stopped.warnings[0]).toContain('behind two NATs')
  }, 60_000)
})
