/**
 * Shared building blocks with no dependencies beyond Node built-ins: the
 * error base class, logger, lifecycle contract, branded ids, deadlines and
 * key-range helpers.
 */
export * from './errors.js'
export * from './logger.js'
export * from './startable.js'
export * from './wait.js'
export * from './brand.js'
export * from './library-path.js'
export * from './key-range.js'
export * from './module-worker.js'
export * from './clock.js'
