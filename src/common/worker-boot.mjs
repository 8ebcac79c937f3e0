// The entry of every worker thread whose code is a TypeScript module (module-worker.ts): registers tsx's loader
// in this thread when the sources are TypeScript (a thread does not inherit the loader bin/meta-core.js registers,
// nor vitest's), then loads the module. Plain JavaScript because it runs before any loader.
import { workerData } from 'node:worker_threads'

const { bootEntry, bootTsx } = workerData
const load = bootTsx === undefined
  ? Promise.resolve()
  : import(bootTsx).then(m => (m.register ?? m.default.register)())
// An error while loading must reach the parent as the worker's 'error' event, with its stack.
load.then(() => import(bootEntry)).catch(err => { setImmediate(() => { throw err }) })
