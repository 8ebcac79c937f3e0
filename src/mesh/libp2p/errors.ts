import { MetaCoreError } from '../../common/index.js'

/** A key file (identity or swarm key) that cannot be used; the message says what to change. */
export class MeshKeyError extends MetaCoreError {
  constructor (message: string, options?: { cause?: unknown }) {
    super('mesh_key', message, options)
  }
}
