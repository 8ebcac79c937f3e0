/**
 * The watcher's figures say what was scanned and what was hashed: a scan's
 * files seen and hashed with their sizes (beside the bytes midhash read of
 * them), and files hashed between scans counted apart, so a scan of an
 * empty folder followed by four arrivals reads "0 seen, 0 hashed; since
 * then 4 hashed", not "0 seen, 4 hashed".
 */
import { describe, expect, it } from 'vitest'
import { harnessPerTest } from './harness.js'

const harness = harnessPerTest({ clock: 'virtual' })
const MiB = 1_048_576

describe('watcher progress figures', () => {
  it('counts a scan\'s files and their sizes, and live changes after it apart', async () => {
    const h = await harness()
    expect(h.watcher.status().progress).toMatchObject({ phase: 'idle', filesSeen: 0, filesHashed: 0, fileBytesHashed: 0,
      sinceScan: { filesHashed: 0, fileBytesHashed: 0 } })
    h.fsd.write('a.bin', Buffer.alloc(3 * MiB, 1))
    h.fsd.write('b.bin', Buffer.alloc(1000, 2))
    await h.waitEvents(e => e.length === 2, 'two adds')
    await h.idle()
    expect(h.watcher.status().progress).toMatchObject({ filesSeen: 0, filesHashed: 0, sinceScan: { filesHashed: 2, fileBytesHashed: 3 * MiB + 1000 } })

    h.fsd.write('c.bin', Buffer.alloc(2000, 3))
    const scan = h.watcher.scan()
    await h.idle()
    await scan
    // The scan found three files and hashed the one it had not seen: its size, and the bytes its midhash read.
    expect(h.watcher.status().progress).toMatchObject({ phase: 'idle', filesSeen: 3, filesHashed: 1, fileBytesHashed: 2000, bytesHashed: 2000,
      sinceScan: { filesHashed: 0, fileBytesHashed: 0 } })
  })
})
