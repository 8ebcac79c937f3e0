/** Nominal typing for identifiers: a `Brand<string, 'Cid'>` is only made by a parse function. */
export type Brand<T, B extends string> = T & { readonly __brand: B }
