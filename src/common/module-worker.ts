/**
 * Worker threads whose code is a module of this repository (a `.ts` file
 * next to the caller), so tsc and eslint check it like any other: the
 * thread boots through worker-boot.mjs, which registers tsx's loader first
 * when the sources are TypeScript (as the node itself does,
 * bin/meta-core.js; a thread inherits neither that loader nor vitest's).
 * Run from compiled `.js` files the module is loaded directly.
 */
import { createRequire } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { Worker, type WorkerOptions } from 'node:worker_threads'

const BOOT = new URL('./worker-boot.mjs', import.meta.url)

/**
 * The URL of the worker module `name` (no extension) beside `callerUrl`
 * (the caller's `import.meta.url`): `.ts` when the caller runs from its
 * TypeScript source, `.js` when compiled.
 */
export function workerModule (name: string, callerUrl: string): URL {
  return new URL(`./${name}${callerUrl.endsWith('.ts') ? '.ts' : '.js'}`, callerUrl)
}

/** Starts a thread running `entry` (see workerModule) with `workerData`. */
export function startModuleWorker (entry: URL, workerData: object, options: Omit<WorkerOptions, 'workerData' | 'eval'> = {}): Worker {
  const bootTsx = entry.pathname.endsWith('.ts') ? tsxApi() : undefined
  return new Worker(BOOT, { ...options, workerData: { ...workerData, bootEntry: entry.href, bootTsx } })
}

let tsx: string | undefined
/** tsx's ESM register API, found through its package.json (a require() resolve would give its CommonJS build). */
function tsxApi (): string {
  if (tsx !== undefined) return tsx
  const require = createRequire(import.meta.url)
  const pkg = require.resolve('tsx/package.json')
  const exp = (require(pkg) as { exports: Record<string, { import: { default: string } }> }).exports['./esm/api'].import.default
  tsx = pathToFileURL(path.join(path.dirname(pkg), exp)).href
  return tsx
}
