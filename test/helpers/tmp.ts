import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/** A fresh temp folder; `cleanup()` removes it. */
export function tmpDir (prefix = 'mc-'): { dir: string, cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  return { dir, cleanup: () => { fs.rmSync(dir, { recursive: true, force: true }) } }
}
