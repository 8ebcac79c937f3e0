/**
 * One-way link delay models (link-model.ts samples one per message). A
 * distribution with spread reorders messages only where the caller lets it:
 * the simulator keeps each directed connection first-in first-out, as a TCP
 * stream does; the virtual mesh's gossip copies and requests travel apart.
 *
 * Spec strings (the simulator's `--latency` option; the virtual mesh's
 * `latency`):
 *   `100` or `constant:100`   every message takes 100 ms
 *   `uniform:50:150`          uniform between 50 and 150 ms
 *   `exp:100`                 exponential with mean 100 ms (heavy tail; min 1 ms)
 *   `regions:world3`          nodes spread round-robin over regions with a
 *                             matrix of one-way delays (presets below, or
 *                             `regions:<r1>,<r2>|<m11>,<m12>;<m21>,<m22>` in ms)
 *   `regions:3:80` or `regions:3:80:1`
 *                             3 regions (r1, r2, r3), 80 ms between them and
 *                             1 ms (the default) inside each
 * Jitter (`--jitter J`) adds a uniform [0, J) ms to any of them. Nodes are
 * numbered from 0 (the virtual mesh numbers them in the order they attach).
 */
import type { Prng } from './prng.js'

export interface LatencyModel {
  /** The spec this model was parsed from, normalised (written into the report). */
  readonly spec: string
  /** One-way delay in ms of one message from node `a` to node `b`. */
  sample: (a: number, b: number, rng: Prng) => number
  /** The mean one-way delay between `a` and `b` (for timeouts and handshakes). */
  mean: (a: number, b: number) => number
  /** The region a node sits in, when the model has regions. */
  regionOf?: (node: number) => string
}

export class InvalidLatencySpecError extends Error {
  constructor (spec: string, why: string) {
    super(`invalid latency "${spec}": ${why}`)
    this.name = 'InvalidLatencySpecError'
  }
}

/**
 * One-way delays between three cloud regions (Frankfurt, Virginia,
 * Singapore), roughly half the public round-trip times between them; 1 ms
 * inside a region.
 */
const PRESETS: Record<string, { regions: string[], matrix: number[][] }> = {
  world3: {
    regions: ['eu', 'us', 'ap'],
    matrix: [[1, 45, 85], [45, 1, 110], [85, 110, 1]]
  },
  lan: { regions: ['lan'], matrix: [[0.5]] }
}

export function parseLatency (spec: string, jitterMs = 0): LatencyModel {
  const s = spec.trim()
  const base = parseBase(s)
  if (!(jitterMs >= 0) || !Number.isFinite(jitterMs)) throw new InvalidLatencySpecError(s, 'jitter must be a finite number >= 0')
  if (jitterMs === 0) return base
  return {
    spec: `${base.spec}+jitter:${jitterMs}`,
    sample: (a, b, rng) => base.sample(a, b, rng) + rng.uniform(0, jitterMs),
    mean: (a, b) => base.mean(a, b) + jitterMs / 2,
    ...(base.regionOf !== undefined ? { regionOf: base.regionOf } : {})
  }
}

function num (spec: string, v: string | undefined, what: string): number {
  const n = Number(v)
  if (v === undefined || v === '' || !Number.isFinite(n) || n < 0) throw new InvalidLatencySpecError(spec, `${what} must be a number >= 0`)
  return n
}

function parseBase (s: string): LatencyModel {
  if (/^[0-9.]+$/.test(s)) return constant(num(s, s, 'delay'))
  const [kind, ...rest] = s.split(':')
  switch (kind) {
    case 'constant':
      return constant(num(s, rest[0], 'delay'))
    case 'uniform': {
      const lo = num(s, rest[0], 'low bound')
      const hi = num(s, rest[1], 'high bound')
      if (hi < lo) throw new InvalidLatencySpecError(s, 'high bound below low bound')
      return { spec: `uniform:${lo}:${hi}`, sample: (_a, _b, rng) => rng.uniform(lo, hi), mean: () => (lo + hi) / 2 }
    }
    case 'exp': {
      const mean = num(s, rest[0], 'mean')
      return { spec: `exp:${mean}`, sample: (_a, _b, rng) => Math.max(1, rng.exponential(mean)), mean: () => mean }
    }
    case 'regions':
      return regions(s, rest.join(':'))
    default:
      throw new InvalidLatencySpecError(s, 'expected a number, constant:, uniform:, exp: or regions:')
  }
}

function constant (ms: number): LatencyModel {
  return { spec: `constant:${ms}`, sample: () => ms, mean: () => ms }
}

function regions (spec: string, body: string): LatencyModel {
  let names: string[]
  let matrix: number[][]
  const preset = PRESETS[body]
  const even = /^(\d+):([0-9.]+)(?::([0-9.]+))?$/.exec(body)
  if (preset !== undefined) {
    names = preset.regions
    matrix = preset.matrix
  } else if (even !== null) {
    const k = Number(even[1])
    if (k < 1 || k > 64) throw new InvalidLatencySpecError(spec, 'between 1 and 64 regions')
    const apart = num(spec, even[2], 'delay between regions')
    const inside = even[3] === undefined ? 1 : num(spec, even[3], 'delay inside a region')
    names = Array.from({ length: k }, (_, i) => `r${i + 1}`)
    matrix = names.map((_, i) => names.map((_, j) => i === j ? inside : apart))
  } else {
    const [head, rows] = body.split('|')
    if (rows === undefined) throw new InvalidLatencySpecError(spec, `unknown preset (known: ${Object.keys(PRESETS).join(', ')}) and no "|<matrix>"`)
    names = head.split(',').map(x => x.trim()).filter(x => x !== '')
    matrix = rows.split(';').map(r => r.split(',').map(x => num(spec, x.trim(), 'matrix entry')))
    if (matrix.length !== names.length || matrix.some(r => r.length !== names.length)) {
      throw new InvalidLatencySpecError(spec, `the matrix must be ${names.length}×${names.length}`)
    }
  }
  const k = names.length
  return {
    spec: `regions:${names.join(',')}|${matrix.map(r => r.join(',')).join(';')}`,
    sample: (a, b) => matrix[a % k][b % k],
    mean: (a, b) => matrix[a % k][b % k],
    regionOf: n => names[n % k]
  }
}
