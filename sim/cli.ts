/**
 * `npm run sim -- --scenario NAME [options] [--out DIR]`: runs a scenario,
 * writes report.json, report.html and timing.json to the output folder, and
 * prints the path of report.html (and the headline figures) on stdout.
 * Progress lines go to stderr. Exit codes: 0 done, 1 the run failed,
 * 2 bad usage.
 */
import fs from 'node:fs'
import path from 'node:path'
import { helpText, parseArgs, UsageError } from './scenario/options.js'
import { PROFILES, resolveOptions, SCENARIOS } from './scenario/scenarios.js'
import { reportHtml } from './report/html.js'
import { reportJson } from './report/report.js'
import { runScenario } from './simulate.js'

// A reader that goes away (`| head`) is not an error of the run.
process.stdout.on('error', (err: NodeJS.ErrnoException) => { if (err.code === 'EPIPE') process.exit(0) })

async function main (argv: string[]): Promise<number> {
  let parsed
  try {
    parsed = parseArgs(argv)
    if (parsed.help) {
      process.stdout.write(helpText(SCENARIOS, PROFILES) + '\n')
      return 0
    }
    resolveOptions(parsed.overrides) // usage errors before any work
  } catch (err) {
    if (err instanceof UsageError || (err instanceof Error && err.name.startsWith('Invalid'))) {
      process.stderr.write(`sim: ${err.message}\n`)
      return 2
    }
    throw err
  }
  const { opts } = resolveOptions(parsed.overrides)
  const out = path.resolve(parsed.out ?? path.join('sim-out', `${opts.scenario}-${opts.seed}`))
  const progress = parsed.quiet ? undefined : (line: string): void => { process.stderr.write(line + '\n') }
  const wall0 = performance.now()
  // libp2p is loaded only for --real, through the mesh module's adapter (sim/real/).
  const realStack = opts.real ? (await import('./real/compare.js')).compareWithRealStack : undefined
  const { report, costs } = await runScenario(parsed.overrides, { progress, ...(realStack !== undefined ? { realStack } : {}) })
  fs.mkdirSync(out, { recursive: true })
  const command = ['npm run sim --', ...argv.filter(a => a !== '--quiet')].join(' ')
  fs.writeFileSync(path.join(out, 'report.json'), reportJson(report))
  fs.writeFileSync(path.join(out, 'report.html'), reportHtml(report, command))
  fs.writeFileSync(path.join(out, 'timing.json'), JSON.stringify({
    totalWallMs: Math.round(performance.now() - wall0), runs: costs.map(c => ({ ...c, wallMs: Math.round(c.wallMs) })), node: process.version
  }, null, 2) + '\n')
  const h = report
  process.stdout.write(`${h.scenario}: ${h.nodes} nodes, converged ${h.converged}, lost writes ${h.lostWrites}, forged applied ${h.forgedApplied}, ` +
    `${h.messagesPerOp} msgs/op, ${h.bytesPerWrite} bytes/write, latency p50 ${h.latencyMs.p50} p99 ${h.latencyMs.p99} max ${h.latencyMs.max} ms` +
    `${h.bars.map(b => `; ${b.label}: ${b.ok ? 'met' : 'NOT met'}`).join('')}\n`)
  const ul = h.runs[h.runs.length - 1].perNode.underLoad
  process.stdout.write(`  per node under load: upload p50 ${ul.uploadPerSecond.p50} max ${ul.uploadPerSecond.max} B/s, download p50 ${ul.downloadPerSecond.p50} max ${ul.downloadPerSecond.max} B/s; busiest node ${ul.busiest.node}\n`)
  process.stdout.write(`  node: ${h.node.command}\n`)
  for (const c of costs) process.stdout.write(`  n=${c.nodes}: wall ${(c.wallMs / 1000).toFixed(1)} s, peak rss ${c.peakRssMiB} MiB\n`)
  process.stdout.write(path.join(out, 'report.html') + '\n')
  const failed = report.runs.some(r => r.failures.length > 0)
  return failed ? 1 : 0
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code }, (err: unknown) => {
  process.stderr.write(`sim: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exitCode = 1
})
