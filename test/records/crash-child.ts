/**
 * Writer process for the crash test: writes records in a loop with several
 * writes in flight (so group commit batches them) and prints `ack <rid> <n>`
 * only after each write's promise resolved, i.e. after COMMIT.
 */
import { openNodeStore } from '../../src/records/index.js'

const FIELDS = 12
const path = process.argv[2]
const s = openNodeStore({ path, nodeId: 'crash-writer' })

let n = 0
async function writer (): Promise<void> {
  for (;;) {
    const i = n++
    const extra: Record<string, string> = { seq: String(i), fieldCount: String(FIELDS) }
    for (let f = 0; f < FIELDS - 5; f++) extra[`f/${f}`] = `value ${i} ${f} ${'x'.repeat(i % 200)}`
    const rid = await s.records.mint(`/files/crash/${i}.bin`, i, i, extra)
    process.stdout.write(`ack ${rid} ${i}\n`)
  }
}

process.stdout.write('ready\n')
void Promise.all(Array.from({ length: 8 }, writer))
