/**
 * The member book on a real store: kept in the node-local keys (not in the
 * digest, not in the change log), read back after a reopen, bounded, and
 * forgiving of what it cannot read.
 */
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { RecordReplica } from '../../src/mesh/index.js'
import { FORGET_AFTER_MS, MAX_ADDRS, MAX_MEMBERS, MEMBERS_KEY, MemberBook } from '../../src/mesh/libp2p/member-book.js'
import { openNodeStore } from '../../src/records/index.js'
import { tmpDir } from '../helpers/tmp.js'

const t = tmpDir()
afterAll(() => { t.cleanup() })
const tcp = (a: string): boolean => a.startsWith('/ip4/')
const T0 = 1_800_000_000_000

describe('MemberBook', () => {
  it('keeps members in the node-local keys across a reopen, out of the digest and the change log', async () => {
    const file = path.join(t.dir, 'book.db')
    let store = openNodeStore({ path: file, nodeId: 'self', backgroundCheckpoint: false })
    let replica = new RecordReplica(store.records)
    const digest = replica.digest()
    const head = replica.head()
    const book = new MemberBook('self', tcp)
    book.connected('A', ['/ip4/10.0.0.1/tcp/4001', '/memory/x'], T0)
    book.heard('B', ['/ip4/10.0.0.2/tcp/4001'], T0)
    book.heard('self', ['/ip4/10.0.0.9/tcp/4001'], T0)
    book.heard('C', [], T0)
    await book.save(replica, T0)
    expect(replica.digest()).toEqual(digest)
    expect(replica.head()).toBe(head)
    store.close()

    store = openNodeStore({ path: file, nodeId: 'self', backgroundCheckpoint: false })
    replica = new RecordReplica(store.records)
    const again = new MemberBook('self', tcp)
    again.load(replica, T0 + 1000)
    expect(again.entries()).toEqual([
      ['A', { addrs: ['/ip4/10.0.0.1/tcp/4001'], lastSeen: T0, lastConnected: T0 }],
      ['B', { addrs: ['/ip4/10.0.0.2/tcp/4001'], lastSeen: T0, lastConnected: null }]
    ])
    // A restarted member announces another port: the latest announcement wins.
    again.connected('B', ['/ip4/10.0.0.2/tcp/4002'], T0 + 2000)
    expect(again.get('B')).toEqual({ addrs: ['/ip4/10.0.0.2/tcp/4002'], lastSeen: T0 + 2000, lastConnected: T0 + 2000 })
    // Unreadable: nothing loaded, nothing thrown.
    await replica.setLocal(MEMBERS_KEY, '{not json')
    const junk = new MemberBook('self', tcp)
    junk.load(replica, T0)
    expect(junk.size).toBe(0)
    store.close()
  })

  it('holds at most MAX_MEMBERS members of MAX_ADDRS addresses, and forgets one unseen for a week', async () => {
    const book = new MemberBook('self', tcp)
    for (let i = 0; i < MAX_MEMBERS + 10; i++) book.heard(`P${i}`, Array.from({ length: 12 }, (_, j) => `/ip4/10.0.${i % 250}.${j}/tcp/4001`), T0 + i)
    expect(book.size).toBe(MAX_MEMBERS)
    expect(book.get('P0')).toBeUndefined() // the ones seen longest ago went first
    expect(book.get(`P${MAX_MEMBERS + 9}`)?.addrs).toHaveLength(MAX_ADDRS)
    const old = new MemberBook('self', tcp)
    old.heard('gone', ['/ip4/10.0.0.1/tcp/1'], T0)
    old.heard('here', ['/ip4/10.0.0.2/tcp/1'], T0 + FORGET_AFTER_MS)
    const store = openNodeStore({ path: path.join(t.dir, 'old.db'), nodeId: 'self', backgroundCheckpoint: false })
    try {
      const replica = new RecordReplica(store.records)
      await old.save(replica, T0 + FORGET_AFTER_MS + 1)
      expect(old.ids().sort()).toEqual(['here'])
      const loaded = new MemberBook('self', tcp)
      loaded.load(replica, T0 + 2 * FORGET_AFTER_MS + 1)
      expect(loaded.size).toBe(0)
    } finally {
      store.close()
    }
  })
})
