/**
 * sim: a discrete-event simulator of meta-core meshes. It drives the mesh's
 * own replication core (`src/mesh/protocol`) over real record stores
 * (SQLite in memory) through a `MeshRuntime` on a virtual clock, with a
 * model of gossipsub and of the network (latency, jitter, loss, bandwidth,
 * partitions, churn, clock skew, bad peers) in place of libp2p.
 *
 * Guarantees: a run is a function of its seed and options (report.json is
 * byte-identical across runs); nothing here imports libp2p, fastify or the
 * watcher. See docs/simulator.md for the model and how to read a report.
 */
export { runScenario } from './simulate.js'
export type { SimulationOutput } from './simulate.js'
export { parseArgs, helpText, UsageError, OPTION_SPECS, BASE_DEFAULTS } from './scenario/options.js'
export type { SimOptions } from './scenario/options.js'
export { SCENARIOS, PROFILES, resolveOptions } from './scenario/scenarios.js'
export { reportJson } from './report/report.js'
export type { Report } from './report/report.js'
export { reportHtml } from './report/html.js'
