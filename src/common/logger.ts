/**
 * A small leveled logger writing one line per entry to stderr. Components take
 * a `Logger` so tests can pass `silentLogger` or capture lines.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent'

export interface Logger {
  debug: (msg: string, fields?: Record<string, unknown>) => void
  info: (msg: string, fields?: Record<string, unknown>) => void
  warn: (msg: string, fields?: Record<string, unknown>) => void
  error: (msg: string, fields?: Record<string, unknown>) => void
  child: (name: string) => Logger
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

interface LoggerOptions {
  level?: LogLevel
  name?: string
  /** Where lines go; defaults to process.stderr. */
  write?: (line: string) => void
}

export function createLogger (opts: LoggerOptions = {}): Logger {
  const level = opts.level ?? 'info'
  const write = opts.write ?? ((line: string) => { process.stderr.write(line + '\n') })
  const make = (name: string | undefined): Logger => {
    const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
      if (ORDER[lvl] < ORDER[level]) return
      const ts = new Date().toISOString()
      const prefix = name === undefined ? '' : `[${name}] `
      const extra = fields === undefined ? '' : ' ' + formatFields(fields)
      write(`${ts} ${lvl.toUpperCase().padEnd(5)} ${prefix}${msg}${extra}`)
    }
    return {
      debug: (m, f) => { emit('debug', m, f) },
      info: (m, f) => { emit('info', m, f) },
      warn: (m, f) => { emit('warn', m, f) },
      error: (m, f) => { emit('error', m, f) },
      child: (child) => make(name === undefined ? child : `${name}:${child}`)
    }
  }
  return make(opts.name)
}

function formatFields (fields: Record<string, unknown>): string {
  return Object.entries(fields).map(([k, v]) => {
    if (v instanceof Error) return `${k}=${JSON.stringify(v.message)}`
    return `${k}=${typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v) ?? String(v)}`
  }).join(' ')
}

export const silentLogger: Logger = createLogger({ level: 'silent' })
