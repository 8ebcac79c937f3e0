/**
 * What tests use beside the watcher's public surface (index.ts): the
 * scripted event source, whose hints a test emits itself, so lifecycle
 * scenarios run without the OS (and "the OS dropped this event" can be
 * scripted). No node composes a watcher with it.
 */
export { createScriptedEventSource } from './scripted-event-source.js'
export type { ScriptedEventSource } from './scripted-event-source.js'
