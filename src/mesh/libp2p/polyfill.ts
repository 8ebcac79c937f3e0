/**
 * libp2p 3 calls `Promise.withResolvers` (Node 22+) unguarded; Node 20 lacks
 * it, and the first stream read or `stop()` would throw. Imported first by
 * every module that loads libp2p (and by vitest's setup).
 */
interface WithResolvers<T> { promise: Promise<T>, resolve: (v: T | PromiseLike<T>) => void, reject: (e?: unknown) => void }

const P = Promise as unknown as { withResolvers?: <T>() => WithResolvers<T> }
if (typeof P.withResolvers !== 'function') {
  P.withResolvers = <T>(): WithResolvers<T> => {
    let resolve!: (v: T | PromiseLike<T>) => void
    let reject!: (e?: unknown) => void
    const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej })
    return { promise, resolve, reject }
  }
}

export {}
