import type { EventSourceStatus, FileEventSource, HintHandler } from './file-event-source.js'

/** A source whose hints come from a script: deterministic tests, and "the OS dropped this event" scenarios. */
export interface ScriptedEventSource extends FileEventSource {
  /** Delivers a hint as the OS would; ignored unless started. */
  emit: (relPath: string) => void
  readonly running: boolean
}

export function createScriptedEventSource (): ScriptedEventSource {
  let handler: HintHandler | undefined
  return {
    async start (onHint) { handler = onHint },
    async stop () { handler = undefined },
    emit (relPath) { handler?.(relPath) },
    get running () { return handler !== undefined },
    status (): EventSourceStatus { return { kind: 'scripted', watching: 0 } }
  }
}
