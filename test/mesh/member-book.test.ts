/**
 * The member book on a real store: kept in the node-local keys (not in the
 * digest, not in the change log), read back after a reopen, bounded, and
 * forgiving of what it cannot read. A member's last-seen time is when its
 * connection dropped (not when it opened), or a frame it signed came, and
 * survives a reopen.
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

  it('keeps a member seen until its connection dropped, and later when a frame it signed came, across a reopen', async () => {
    const file = path.join(t.dir, 'left.db')
    let store = openNodeStore({ path: file, nodeId: 'self', backgroundCheckpoint: false })
    try {
      let replica = new RecordReplica(store.records)
      const book = new MemberBook('self', tcp)
      book.connected('A', ['/ip4/10.0.0.1/tcp/4001'], T0)
      book.heard('B', ['/ip4/10.0.0.2/tcp/4001'], T0)
      await book.save(replica, T0)
      // Connected at T0, dropped at T0 + 10 min: seen (and connected) until then.
      book.left('A', T0 + 600_000)
      book.left('unknown', T0 + 600_000) // no entry, no address: nothing to keep
      expect(book.get('A')).toEqual({ addrs: ['/ip4/10.0.0.1/tcp/4001'], lastSeen: T0 + 600_000, lastConnected: T0 + 600_000 })
      // A drop is saved without anything else changing (a node that dies later keeps it).
      await book.save(replica, T0 + 600_000)
      const saved = new MemberBook('self', tcp)
      saved.load(replica, T0 + 600_000)
      expect(saved.get('A')?.lastConnected).toBe(T0 + 600_000)
      // A frame it signed, relayed after it left: seen then, never connected since.
      book.seen('A', T0 + 900_000)
      book.seen('B', T0 + 700_000)
      book.seen('nobody', T0 + 900_000)
      expect(book.get('A')).toEqual({ addrs: ['/ip4/10.0.0.1/tcp/4001'], lastSeen: T0 + 900_000, lastConnected: T0 + 600_000 })
      expect(book.get('B')?.lastConnected).toBeNull()
      expect(book.get('nobody')).toBeUndefined()
      // An older time never moves it back.
      book.seen('A', T0 + 1_000)
      expect(book.get('A')?.lastSeen).toBe(T0 + 900_000)
      book.touch()
      await book.save(replica, T0 + 900_000)
      store.close()

      store = openNodeStore({ path: file, nodeId: 'self', backgroundCheckpoint: false })
      replica = new RecordReplica(store.records)
      const again = new MemberBook('self', tcp)
      again.load(replica, T0 + 1_000_000)
      expect(again.get('A')).toEqual({ addrs: ['/ip4/10.0.0.1/tcp/4001'], lastSeen: T0 + 900_000, lastConnected: T0 + 600_000 })
      expect(again.get('B')).toEqual({ addrs: ['/ip4/10.0.0.2/tcp/4001'], lastSeen: T0 + 700_000, lastConnected: null })
    } finally {
      store.close()
    }
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
