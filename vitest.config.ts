import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // libp2p 3 needs Promise.withResolvers, which Node 20 lacks.
    setupFiles: ['src/mesh/libp2p/polyfill.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two test files at a time on a two-core machine (the default is one fewer than the cores): most of the
    // suite waits on real processes, sockets, timers and disks, so the run takes about 60 % of the time serial
    // runs took, and the timing-sensitive tests bound what they wait for rather than how long it takes.
    maxWorkers: 2,
    reporters: ['default']
  }
})
