/**
 * report.html: one self-contained page (inline CSS and SVG, no script)
 * that shows a report.json to a person: the headline figures and bars, the
 * model against the real stack, and the plots (latency distribution, cost
 * against node count, catch-up progress, timeline of partitions and churn).
 */
import type { RunSummary } from '../metrics/summary.js'
import type { RealStackFigures, Report } from './report.js'
import { esc, lineSvg, logHistogramSvg, timelineSvg, type Interval, type Marker } from './svg.js'

const CSS = `body{font-family:system-ui,sans-serif;margin:24px auto;max-width:980px;color:#111;line-height:1.4}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f3f4f6}td:first-child,th:first-child{text-align:left}.ok{color:#047857;font-weight:600}.bad{color:#b91c1c;font-weight:600}
pre{background:#f6f8fa;padding:8px;font-size:12px;overflow:auto}.empty{color:#777;font-style:italic}.note{color:#444;font-size:13px}`

const yes = (b: boolean): string => `<span class="${b ? 'ok' : 'bad'}">${b ? 'yes' : 'no'}</span>`

function table (head: string[], rows: Array<Array<string | number>>): string {
  return `<table><tr>${head.map(h => `<th>${esc(h)}</th>`).join('')}</tr>${rows.map(r => `<tr>${r.map(c => `<td>${typeof c === 'number' ? c : c}</td>`).join('')}</tr>`).join('')}</table>`
}

function timeline (r: RunSummary): string {
  const intervals: Interval[] = []
  const markers: Marker[] = []
  let open: { at: number, label: string } | undefined
  for (const e of r.timeline) {
    if (e.kind === 'partition') open = { at: e.t, label: `partition ${e.detail ?? ''}` }
    else if (e.kind === 'heal') {
      if (open !== undefined) intervals.push({ from: open.at, to: e.t, label: open.label })
      open = undefined
    } else markers.push({ at: e.t, label: `${e.kind}${e.nodes !== undefined ? ' ' + e.nodes.join(',') : ''}` })
  }
  if (open !== undefined) intervals.push({ from: open.at, to: r.virtualMs, label: open.label })
  return timelineSvg(r.virtualMs, intervals, markers, [])
}

export function reportHtml (rep: Report, command: string): string {
  const head = rep.runs[rep.runs.length - 1]
  const parts: string[] = []
  parts.push(`<h1>Simulation: ${esc(rep.scenario)} (${rep.nodes} nodes, seed ${esc(rep.seed)}, profile ${esc(rep.profile)})</h1>`)
  parts.push(`<p class="note">Reproduce: <code>${esc(command)}</code>. The same seed and options give the same report.json, byte for byte.</p>`)
  parts.push(rep.node.runnable
    ? `<p class="note">A node runs this configuration with ${Object.keys(rep.node.env).length === 0 ? 'its default options' : 'these options'}: <code>${esc(rep.node.command)}</code></p>`
    : `<p class="bad">Model only: no node can be set to run this configuration (${esc(rep.node.modelOnly.join('; '))}).</p>`)
  parts.push('<h2>Headline</h2>')
  parts.push(table(['figure', 'value'], [
    ['converged (equal replica digests on every honest node)', yes(rep.converged)],
    ['lost writes (acknowledged, missing on an up node)', rep.lostWrites],
    ['forged or refused entries applied', rep.forgedApplied],
    ['messages per operation', rep.messagesPerOp],
    ['bytes per write (all traffic / writes)', rep.bytesPerWrite],
    ['duplicate gossip deliveries per write', rep.duplicatesPerWrite],
    ['stable latency p50 / p99 / max (ms)', `${rep.latencyMs.p50} / ${rep.latencyMs.p99} / ${rep.latencyMs.max}`],
    ['… of writes made while the network was whole', `${rep.latencyMsUnpartitioned.p50} / ${rep.latencyMsUnpartitioned.p99} / ${rep.latencyMsUnpartitioned.max} (${rep.latencyMsUnpartitioned.count} writes)`],
    ['operations (writes + reads)', `${head.operations.total} (${head.operations.writes} + ${head.operations.reads})`]
  ]))
  const ul = head.perNode.underLoad
  const kb = (x: number): string => `${(x / 1000).toFixed(1)} kB/s`
  parts.push(`<h2>Per node under load</h2><p class="note">From ${(ul.fromMs / 1000).toFixed(1)} s to ${(ul.toMs / 1000).toFixed(1)} s of virtual time: the load, its first 10 %, the warm-up and the tail left out.</p>`)
  parts.push(table(['per node', 'p50', 'p90', 'max', 'mean'], [
    ['upload (bytes sent per second)', kb(ul.uploadPerSecond.p50), kb(ul.uploadPerSecond.p90), kb(ul.uploadPerSecond.max), kb(ul.uploadPerSecond.mean)],
    ['download (bytes received per second)', kb(ul.downloadPerSecond.p50), kb(ul.downloadPerSecond.p90), kb(ul.downloadPerSecond.max),
      kb(ul.downloadPerSecond.mean)],
    ['virtual CPU busy (fraction of the run)', head.cpu.busyFraction.p50, head.cpu.busyFraction.p90, head.cpu.busyFraction.max, head.cpu.busyFraction.mean],
    ['longest wait for the CPU (ms)', head.cpu.maxWaitMs.p50, head.cpu.maxWaitMs.p90, head.cpu.maxWaitMs.max, head.cpu.maxWaitMs.mean]
  ]))
  parts.push(`<p class="note">Busiest node: ${ul.busiest.node}, uploading ${kb(ul.busiest.uploadPerSecond)} and downloading ${kb(ul.busiest.downloadPerSecond)}. Busiest CPU: node ${head.cpu.busiest.node}, ${(head.cpu.busiest.busyFraction * 100).toFixed(1)} % busy, longest wait ${head.cpu.busiest.maxWaitMs} ms.</p>`)
  const rg = head.regions
  if (rg !== undefined) {
    parts.push(`<p class="note">Between regions (${rep.options.dial === 'regions' ? `region-aware dialing, ${rep.options.crossRegionPeers} connections across per node` : 'random dialing'}): ` +
      `${rg.connections.between} of ${rg.connections.inside + rg.connections.between} connections, the regions ${rg.regionsConnected ? 'all reach each other' : 'do NOT all reach each other'}; ` +
      `${kb(rg.bytesBetweenPerSecondUnderLoad)} under load over the mesh, ${(rg.shareOfBytes * 100).toFixed(1)} % of all bytes, ${rg.bytesBetweenPerWrite} bytes per write.</p>`)
  }
  if (rep.bars.length > 0) {
    parts.push('<h2>Bars</h2>')
    for (const b of rep.bars) {
      parts.push(`<p><b>${esc(b.label)}</b>: ${yes(b.ok)} (with zero lost writes and convergence)</p>`)
      parts.push(table(['bar', 'limit', 'value', 'met'], b.results.map(x => [esc(x.name), `&lt; ${x.limit}`, x.value, yes(x.ok)])))
    }
  }
  if (rep.realStack !== undefined) {
    const rs = rep.realStack
    parts.push('<h2>Model against the real stack</h2>')
    parts.push(`<p class="note">The same scenario on ${rs.nodes} real libp2p nodes at ${rs.rate} operations/s (in-memory transport with link latency, real time), against the model at the same options. Agreement within ${rs.withinFactor}×: ${yes(rs.agrees)}</p>`)
    const row = (label: string, k: keyof RealStackFigures): Array<string | number> => [label, rs.model[k] ?? 'not done', rs.real[k] ?? 'not done',
      rs.ratio[k] ?? '']
    parts.push(table(['figure', 'model', 'real stack', 'real / model'], [
      row('stable latency p50 (ms)', 'latencyP50'),
      row('stable latency p99 (ms)', 'latencyP99'),
      row('messages per operation', 'messagesPerOp'),
      row('messages per write', 'messagesPerWrite'),
      row('bytes per write under load', 'bytesPerWriteUnderLoad'),
      ...('catchUpMs' in rs.ratio ? [row('joining or returning node caught up (ms)', 'catchUpMs')] : [])
    ]))
    parts.push(table(['real stack', 'value'], [
      ['converged', yes(rs.real.converged)], ['lost writes', rs.real.lostWrites], ['operations', rs.real.operations],
      ['latency max (ms)', rs.real.latencyMax],
      ['events run', esc(rs.events.run.join('; '))],
      ['not run', esc(rs.events.notRun.join('; ') || 'nothing')],
      ['outside the factor', esc(rs.outside.join(', ') || 'nothing')]
    ]))
    for (const n of rs.notes) parts.push(`<p class="note">${esc(n)}</p>`)
  }
  parts.push('<h2>Stable latency distribution</h2>')
  parts.push(logHistogramSvg(head.latencyHistogram.lower, head.latencyHistogram.edges, head.latencyHistogram.counts,
    [{ label: `p50 ${head.latencyMs.p50}`, x: head.latencyMs.p50 }, { label: `p99 ${head.latencyMs.p99}`, x: head.latencyMs.p99 }],
    'ms from the write until readable on every node'))
  if (rep.runs.length > 1) {
    // A single run is one point: no plot against node count.
    parts.push('<h2>Cost and latency against node count</h2>')
    const pts = (f: (r: RunSummary) => number): Array<[number, number]> => rep.runs.map(r => [r.nodes, f(r)])
    parts.push(lineSvg([{ label: 'messages per operation', points: pts(r => r.messagesPerOp) }], { xLabel: 'nodes', yLabel: 'messages / op', logX: true }))
    parts.push(lineSvg([
      { label: 'upload per node (p50)', points: pts(r => r.perNode.underLoad.uploadPerSecond.p50) },
      { label: 'download per node (p50)', points: pts(r => r.perNode.underLoad.downloadPerSecond.p50) }
    ], { xLabel: 'nodes', yLabel: 'bytes per second under load', logX: true }))
    parts.push(lineSvg([
      { label: 'p50', points: pts(r => r.latencyMs.p50) }, { label: 'p99', points: pts(r => r.latencyMs.p99) },
        { label: 'max', points: pts(r => r.latencyMs.max) }
    ], { xLabel: 'nodes', yLabel: 'stable latency (ms)', logX: true }))
    parts.push(table(['nodes', 'msgs/op', 'bytes/write', 'bytes/node/write', 'upload/node/s under load (p50 / max)', 'download/node/s (p50 / max)',
      'CPU busy max', 'p50 ms', 'p99 ms', 'max ms', 'converged', 'lost'],
      rep.runs.map(r => [r.nodes, r.messagesPerOp, r.bytesPerWrite, r.perNode.bytesPerWrite,
        `${r.perNode.underLoad.uploadPerSecond.p50} / ${r.perNode.underLoad.uploadPerSecond.max}`, `${r.perNode.underLoad.downloadPerSecond.p50} / ${r.perNode.underLoad.downloadPerSecond.max}`,
        r.cpu.busyFraction.max, r.latencyMs.p50, r.latencyMs.p99, r.latencyMs.max, yes(r.converged), r.lostWrites])))
  }
  parts.push('<h2>Catch-up progress</h2>')
  const cu = rep.runs.flatMap(r => r.catchUp.map(c => ({ ...c, nodes: r.nodes })))
  parts.push(lineSvg(cu.map(c => ({ label: `${c.kind} node ${c.node}${rep.runs.length > 1 ? ` (n=${c.nodes})` : ''}`, points: c.progress })),
    { xLabel: 'ms since the node started', yLabel: 'fraction of missing writes received', yMax: 1 }))
  if (cu.length > 0) {
    parts.push(table(['node', 'kind', 'writes missing', 'received', 'records to hold', 'held', 'time (ms)', 'bytes in', 'messages in'],
      cu.map(c => [c.node, c.kind, c.target, c.got, c.records?.target ?? '', c.records?.got ?? '', c.timeMs ?? 'not done', c.bytes, c.messages])))
  }
  parts.push('<h2>Timeline of partitions and churn</h2>')
  parts.push(timeline(head))
  parts.push('<h2>Messages by kind</h2>')
  parts.push(table(['kind', 'count', 'bytes', 'per operation'], Object.entries(head.messages.byKind).map(([k, v]) =>
    [k, v.count, v.bytes, (v.count / Math.max(1, head.operations.total)).toFixed(2)])))
  if (Object.keys(head.lostMessages).length > 0) parts.push(`<p class="note">Messages lost in the network: ${esc(JSON.stringify(head.lostMessages))}</p>`)
  parts.push('<h2>Validation and bad input</h2>')
  parts.push(table(['figure', 'value'], [
    ['gossip verdicts at honest nodes (accept / reject / ignore)', `${head.gossip.verdicts.accept} / ${head.gossip.verdicts.reject} / ${head.gossip.verdicts.ignore}`],
    ['frames from bad peers rejected', head.rejected.fromBad],
    ['frames from honest nodes rejected', head.rejected.fromHonest],
    ['bad peers: core counters at honest nodes', esc(JSON.stringify(head.rejected.badPeerCounters))],
    ['clock-drift refusals of honest entries', head.rejected.honestDriftRefusals]
  ]))
  if (Object.keys(head.checks).length > 0) parts.push(`<h2>Scenario checks</h2><pre>${esc(JSON.stringify(head.checks, null, 2))}</pre>`)
  if (head.failures.length > 0) parts.push(`<h2 class="bad">Failures inside the run</h2><pre>${esc(head.failures.join('\n\n'))}</pre>`)
  parts.push('<h2>Options and configuration</h2>')
  parts.push(`<details><summary>every option of the run, and the gossipsub, core and network configuration it resolved to</summary><pre>${esc(JSON.stringify({ options: rep.options, node: rep.node, config: rep.config }, null, 2))}</pre></details>`)
  parts.push('<p class="note">How to read this page: docs/simulator.md in the repository.</p>')
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>sim: ${esc(rep.scenario)}</title><style>${CSS}</style></head><body>${parts.join('\n')}</body></html>\n`
}
