import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The package's own folder (two levels above src/node), where package.json and ui/dist sit. */
function packageRoot (): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
}

/** The built web page the node serves. */
export function uiDistPath (): string {
  return path.join(packageRoot(), 'ui', 'dist')
}

/** The version in package.json (shown by /status and the OpenAPI document); "0.0.0" when it cannot be read. */
export function packageVersion (): string {
  try {
    const file = path.join(packageRoot(), 'package.json')
    const v = (JSON.parse(fs.readFileSync(file, 'utf8')) as { version?: unknown }).version
    return typeof v === 'string' ? v : '0.0.0'
  } catch {
    return '0.0.0' // a missing version is cosmetic; the node runs the same
  }
}
