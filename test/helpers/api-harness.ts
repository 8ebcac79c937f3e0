/**
 * A node's store and API in a temp folder, for route tests: real SQLite,
 * real files, the real search service and a (non-watching) real watcher,
 * `app.inject()` or a real listener on 127.0.0.1.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { Clock, Logger } from '../../src/common/index.js'
import { buildApp, type ApiInit } from '../../src/api/index.js'
import { openNodeStore, type NodeStore } from '../../src/records/index.js'
import { createSearch } from '../../src/search/index.js'
import { createWatcher } from '../../src/watcher/index.js'

export interface ApiHarness {
  dir: string
  filesPath: string
  dbPath: string
  store: NodeStore
  app: FastifyInstance
  /** Base URL once `listen()` ran. */
  url: string
  listen: () => Promise<string>
  close: () => Promise<void>
}

export interface HarnessOptions extends Partial<ApiInit> {
  logger?: Logger
  /** The API's clock (default: the system's). */
  clock?: Clock
  /** false: a node without search. */
  search?: boolean
  /** false: a node without a watcher (default: the real watcher, not watching). */
  watcher?: boolean
  streamRetention?: number
  trimEvery?: number
}

export async function startApi (opts: HarnessOptions = {}): Promise<ApiHarness> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mc-'))
  const filesPath = path.join(dir, 'files')
  fs.mkdirSync(filesPath)
  const dbPath = path.join(dir, 'db', 'meta-core.db')
  const store = openNodeStore({ path: dbPath, nodeId: 'test-node', streamRetention: opts.streamRetention, trimEvery: opts.trimEvery })
  const { search, watcher, logger, clock, streamRetention: _r, trimEvery: _t, ...init } = opts
  const app = buildApp({
    logger,
    clock,
    kv: store.kv,
    records: store.records,
    search: search === false ? undefined : await started(createSearch({ kv: store.kv, records: store.records })),
    watcher: watcher === false ? undefined : createWatcher({ records: store.records }, { filesPath, enabled: false })
  }, { filesPath, ...init })
  const h: ApiHarness = {
    dir,
    filesPath,
    dbPath,
    store,
    app,
    url: '',
    async listen () {
      await app.listen({ host: '127.0.0.1', port: 0 })
      const a = app.server.address()
      if (a === null || typeof a === 'string') throw new Error('no address')
      h.url = `http://127.0.0.1:${a.port}`
      return h.url
    },
    async close () {
      try {
        await app.close()
      } finally {
        store.close()
        fs.rmSync(dir, { recursive: true, force: true })
      }
    }
  }
  return h
}

async function started<T extends { start: () => Promise<void> }> (c: T): Promise<T> {
  await c.start()
  return c
}
