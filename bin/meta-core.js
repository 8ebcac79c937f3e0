#!/usr/bin/env node
// The `meta-core` command. It runs the TypeScript sources through tsx's loader (a production
// dependency), so a clone and the Docker image run the same files with no build step.
import { register } from 'tsx/esm/api'

register()
await import('../src/node/main.ts')
