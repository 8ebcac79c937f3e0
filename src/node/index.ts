/**
 * node: the composition root. It owns the configuration (env and flags,
 * validated once, config.ts), the start order (store → search → watcher →
 * API) and the reverse stop order (start-node.ts), signals and the CLI
 * (main.ts, what `npm start` runs).
 *
 * Guarantees: a bad configuration never starts anything and names every
 * problem; a non-loopback listen address is refused without an API token; a
 * start that fails half-way stops what it started; stop closes the store
 * last, after the API and the watcher are done with it.
 */
export { parseConfig, usage, isLoopback, ConfigError, OPTIONS } from './config.js'
export type { NodeConfig } from './config.js'
export { startNode } from './start-node.js'
export type { RunningNode } from './start-node.js'
