import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // libp2p 3 needs Promise.withResolvers, which Node 20 lacks.
    setupFiles: ['src/mesh/libp2p/polyfill.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    reporters: ['default']
  }
})
