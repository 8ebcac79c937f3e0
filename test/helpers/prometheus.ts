/**
 * Reads `/metrics` with a Prometheus text-format parser
 * (parse-prometheus-text-format) and looks samples up by name and labels.
 *
 * That parser reads counters and gauges with their labels, but folds a
 * histogram's label sets into one sample (it keeps only the buckets of
 * unlabelled histograms). So the text is parsed twice: as served, for the
 * families, their types and the syntax; and with histograms declared
 * untyped, where each histogram's `_bucket`, `_sum` and `_count` series
 * come out as series of their own with their labels intact.
 */
import parsePrometheusTextFormat from 'parse-prometheus-text-format'

type Families = ReturnType<typeof parsePrometheusTextFormat>
type Family = Families[number]

/** Sample values as Prometheus reads them (Go's ParseFloat): a float, or ±Inf / NaN in any case. */
const isSampleValue = (v: string | undefined): boolean => v !== undefined && (/^[+-]?(inf|infinity|nan)$/i.test(v) || Number.isFinite(Number(v)))

export class Scrape {
  readonly byName = new Map<string, Family>()
  private readonly series = new Map<string, Family>()

  constructor (readonly text: string) {
    for (const f of parsePrometheusTextFormat(text)) {
      // Two registries concatenated must never repeat a family: Prometheus would refuse the scrape.
      if (this.byName.has(f.name)) throw new Error(`metric family ${f.name} appears twice`)
      this.byName.set(f.name, f)
    }
    const histograms = [...this.byName.values()].filter(f => f.type === 'HISTOGRAM').map(f => f.name)
    const flat = text.split('\n').map(l => (histograms.some(h => l === `# TYPE ${h} histogram`) ? l.replace(/ histogram$/, ' untyped') : l)).join('\n')
    for (const f of parsePrometheusTextFormat(flat)) {
      for (const m of f.metrics) if (!isSampleValue(m.value)) throw new Error(`${f.name}: sample value ${String(m.value)} is not a number`)
      // A histogram's label sets come one after another (buckets, sum, count), so each series name recurs.
      const seen = this.series.get(f.name)
      if (seen === undefined) this.series.set(f.name, { ...f, metrics: [...f.metrics] })
      else seen.metrics.push(...f.metrics)
    }
  }

  family (name: string): Family {
    const f = this.byName.get(name)
    if (f === undefined) throw new Error(`no metric family ${name}`)
    return f
  }

  /** A counter's or gauge's value, or one series of a histogram (`x_count`); 0 when no sample has these labels (a series not born yet). */
  value (name: string, labels: Record<string, string> = {}): number {
    const f = this.series.get(name)
    if (f === undefined) throw new Error(`no metric series ${name}`)
    const s = f.metrics.find(m => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
    return s === undefined ? 0 : Number(s.value)
  }

  /** A histogram's observation count and sum for one label set (0 when no sample has these labels). */
  histogram (name: string, labels: Record<string, string> = {}): { count: number, sum: number } {
    const f = this.family(name)
    if (f.type !== 'HISTOGRAM') throw new Error(`${name} is a ${f.type}, not a histogram`)
    // A labelled histogram with no observation yet has no series at all.
    if (!this.series.has(`${name}_count`)) return { count: 0, sum: 0 }
    return { count: this.value(`${name}_count`, labels), sum: this.value(`${name}_sum`, labels) }
  }

  /** Label sets of a counter's or gauge's samples, or of a histogram's `_count` series. */
  labels (name: string): Array<Record<string, string>> {
    const f = this.family(name)
    const series = this.series.get(f.type === 'HISTOGRAM' ? `${name}_count` : name)
    return (series?.metrics ?? []).map(m => m.labels ?? {})
  }
}

export async function scrape (baseUrl: string, token?: string): Promise<Scrape> {
  const r = await fetch(`${baseUrl}/metrics`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } })
  const text = await r.text()
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}: ${text.slice(0, 200)}`)
  if (!(r.headers.get('content-type') ?? '').startsWith('text/plain; version=0.0.4')) throw new Error(`/metrics content type ${r.headers.get('content-type') ?? ''}`)
  return new Scrape(text)
}
