/**
 * Tiny inline-SVG charts for the HTML report: no script, no external file,
 * so the page opens from disk anywhere. Each function returns one `<svg>`.
 */

const W = 640
const H = 260
const M = { l: 64, r: 16, t: 16, b: 44 }
const COLORS = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#0891b2', '#be185d', '#4b5563']

export function esc (s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

function fmt (x: number): string {
  if (x === 0) return '0'
  const a = Math.abs(x)
  if (a >= 1e6) return `${+(x / 1e6).toPrecision(3)}M`
  if (a >= 1e4) return `${+(x / 1e3).toPrecision(3)}k`
  return `${+x.toPrecision(3)}`
}

function niceMax (x: number): number {
  if (x <= 0) return 1
  const p = 10 ** Math.floor(Math.log10(x))
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= x) return m * p
  return 10 * p
}

function frame (body: string, xLabel: string, yLabel: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="sans-serif" font-size="11">` +
    `<rect x="${M.l}" y="${M.t}" width="${W - M.l - M.r}" height="${H - M.t - M.b}" fill="#fafafa" stroke="#ddd"/>` +
    body +
    `<text x="${(M.l + W - M.r) / 2}" y="${H - 8}" text-anchor="middle" fill="#333">${esc(xLabel)}</text>` +
    `<text transform="translate(14 ${(M.t + H - M.b) / 2}) rotate(-90)" text-anchor="middle" fill="#333">${esc(yLabel)}</text></svg>`
}

function yAxis (max: number, y: (v: number) => number): string {
  let s = ''
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4
    s += `<line x1="${M.l}" x2="${W - M.r}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>` +
      `<text x="${M.l - 6}" y="${y(v) + 4}" text-anchor="end" fill="#555">${fmt(v)}</text>`
  }
  return s
}

/**
 * Ticks for a logarithmic axis from `lo` to `hi` (values, not logs): 1, 2
 * and 5 times each power of ten; when fewer than three of those fall in a
 * narrow range, evenly spaced round values instead (a histogram of writes
 * all readable within a few ms of each other spans a sliver of a decade).
 */
export function logTicks (lo: number, hi: number): number[] {
  const out: number[] = []
  for (let d = Math.floor(Math.log10(lo)); d <= Math.ceil(Math.log10(hi)); d++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** d
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push(v)
    }
  }
  if (out.length >= 3) return out
  const raw = (hi - lo) / 4
  const p = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 2.5, 5, 10].map(m => m * p).find(s => s >= raw) ?? 10 * p
  const ticks: number[] = []
  for (let v = Math.ceil(lo / step) * step; v <= hi * (1 + 1e-9); v += step) ticks.push(Number(v.toPrecision(12)))
  return ticks
}

/** A tick's label, with the decimals its neighbours need to differ. */
function tickLabel (v: number, step: number): string {
  if (step >= 1 || v >= 1e4) return fmt(v)
  return v.toFixed(Math.min(4, Math.ceil(-Math.log10(step))))
}

/**
 * A histogram over a logarithmic x axis: bins from `lower` to `edges[i]`
 * (upper edges, equal width on the log scale), ticks from `logTicks`,
 * vertical markers (p50, p99), both axes labelled.
 */
export function logHistogramSvg (lower: number, edges: number[], counts: number[], markers: Array<{ label: string, x: number }>, xLabel: string,
  yLabel = 'writes per bin'): string {
  if (counts.length === 0 || counts.every(c => c === 0)) return '<p class="empty">no data</p>'
  const lo = Math.log10(Math.max(1e-3, lower))
  const hi = Math.log10(edges[edges.length - 1])
  const span = Math.max(1e-9, hi - lo)
  const ymax = niceMax(Math.max(...counts))
  const x = (v: number): number => M.l + ((Math.log10(Math.max(1e-3, v)) - lo) / span) * (W - M.l - M.r)
  const y = (v: number): number => H - M.b - (v / ymax) * (H - M.t - M.b)
  let body = yAxis(ymax, y)
  let from = lower
  counts.forEach((c, i) => {
    const to = edges[i]
    body += `<rect x="${x(from).toFixed(1)}" y="${y(c).toFixed(1)}" width="${Math.max(1, x(to) - x(from) - 1).toFixed(1)}" height="${(H - M.b - y(c)).toFixed(1)}" fill="${COLORS[0]}"><title>${+from.toPrecision(4)}–${+to.toPrecision(4)}: ${c}</title></rect>`
    from = to
  })
  const ticks = logTicks(10 ** lo, 10 ** hi)
  const step = ticks.length > 1 ? Math.min(...ticks.slice(1).map((t, i) => t - ticks[i])) : 1
  for (const v of ticks) {
    body += `<line x1="${x(v).toFixed(1)}" x2="${x(v).toFixed(1)}" y1="${H - M.b}" y2="${H - M.b + 4}" stroke="#888"/><text x="${x(v).toFixed(1)}" y="${H - M.b + 14}" text-anchor="middle" fill="#555">${tickLabel(v, step)}</text>`
  }
  markers.forEach((m, i) => {
    body += `<line x1="${x(m.x)}" x2="${x(m.x)}" y1="${M.t}" y2="${H - M.b}" stroke="${COLORS[1 + i]}" stroke-dasharray="4 3"/>` +
      `<text x="${x(m.x) + 3}" y="${M.t + 12 + 12 * i}" fill="${COLORS[1 + i]}">${esc(m.label)}</text>`
  })
  return frame(body, xLabel + ' (log scale)', yLabel)
}

interface Series {
  label: string
  points: Array<[number, number]>
}

/** Lines over a linear or logarithmic x axis, points marked. */
export function lineSvg (series: Series[], opts: { xLabel: string, yLabel: string, logX?: boolean, yMax?: number }): string {
  const pts = series.flatMap(s => s.points)
  if (pts.length === 0) return '<p class="empty">no data</p>'
  const xs = pts.map(p => p[0])
  const lx = (v: number): number => opts.logX === true ? Math.log10(Math.max(v, 1e-9)) : v
  let xmin = Math.min(...xs.map(lx))
  let xmax = Math.max(...xs.map(lx))
  if (opts.logX !== true) { xmin = 0; xmax = niceMax(xmax) }
  if (xmax === xmin) { xmax = xmin + 1; xmin = xmin - (opts.logX === true ? 0.5 : 0) }
  const ymax = opts.yMax ?? niceMax(Math.max(...pts.map(p => p[1])))
  const x = (v: number): number => M.l + ((lx(v) - xmin) / (xmax - xmin)) * (W - M.l - M.r)
  const y = (v: number): number => H - M.b - (v / ymax) * (H - M.t - M.b)
  let body = yAxis(ymax, y)
  const ticks = opts.logX === true ? [...new Set(xs)].sort((a, b) => a - b) : [0, 1, 2, 3, 4].map(i => (xmax * i) / 4)
  for (const t of ticks) body += `<text x="${x(t)}" y="${H - M.b + 14}" text-anchor="middle" fill="#555">${fmt(t)}</text>`
  series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length]
    const d = s.points.map((p, j) => `${j === 0 ? 'M' : 'L'}${x(p[0]).toFixed(1)} ${y(p[1]).toFixed(1)}`).join(' ')
    body += `<path d="${d}" fill="none" stroke="${c}" stroke-width="2"/>`
    if (s.points.length <= 40) for (const p of s.points) body += `<circle cx="${x(p[0]).toFixed(1)}" cy="${y(p[1]).toFixed(1)}" r="3" fill="${c}"><title>${esc(s.label)}: ${fmt(p[0])}, ${fmt(p[1])}</title></circle>`
    body += `<text x="${W - M.r - 6}" y="${M.t + 14 + 14 * i}" text-anchor="end" fill="${c}">${esc(s.label)}</text>`
  })
  return frame(body, opts.xLabel, opts.yLabel)
}

export interface Interval { from: number, to: number, label: string }
export interface Marker { at: number, label: string }

/** A time axis with shaded intervals (partitions) and labelled markers (churn). */
export function timelineSvg (endMs: number, intervals: Interval[], markers: Marker[], bands: Array<{ from: number, to: number, label: string }>): string {
  const h = 120
  const x = (t: number): number => M.l + (t / Math.max(1, endMs)) * (W - M.l - M.r)
  let body = `<rect x="${M.l}" y="20" width="${W - M.l - M.r}" height="50" fill="#fafafa" stroke="#ddd"/>`
  for (const b of bands) body += `<rect x="${x(b.from)}" y="20" width="${x(b.to) - x(b.from)}" height="50" fill="#dbeafe"><title>${esc(b.label)}</title></rect>`
  for (const iv of intervals) body += `<rect x="${x(iv.from)}" y="28" width="${Math.max(1, x(iv.to) - x(iv.from))}" height="34" fill="#fca5a5" opacity="0.8"><title>${esc(iv.label)}</title></rect>`
  markers.forEach((m, i) => {
    body += `<line x1="${x(m.at)}" x2="${x(m.at)}" y1="16" y2="74" stroke="#111"/>` +
      `<text x="${x(m.at) + 2}" y="${86 + 11 * (i % 3)}" fill="#111">${esc(m.label)}</text>`
  })
  for (let i = 0; i <= 4; i++) body += `<text x="${x((endMs * i) / 4)}" y="14" text-anchor="middle" fill="#555">${fmt((endMs * i) / 4000)} s</text>`
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${h}" width="${W}" height="${h}" font-family="sans-serif" font-size="11">${body}</svg>`
}
