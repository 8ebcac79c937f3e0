/**
 * Response serializers compiled on first use. Fastify compiles every
 * route's response schemas with fast-json-stringify while the app is
 * built: about 0.18 s of a CPU profile of a start (about a tenth of it),
 * for routes a start seldom serves all of. This
 * is Fastify's own serializer factory (its dependency, resolved from
 * Fastify's package, so the version is the one Fastify ships with), each
 * schema compiled when the first response with that status is sent: the
 * same serializers, the same output. A schema fast-json-stringify cannot
 * compile now fails that first response instead of the start, so the API
 * tests compile every route's schemas (test/api/lazy-serializers.test.ts).
 */
import { createRequire } from 'node:module'

/** What Fastify hands a serializer compiler: a route's response schema and where it belongs. */
interface ResponseSchemaRoute { schema?: unknown, method?: string, url?: string, httpStatus?: string, contentType?: string }
type Serialize = (data: unknown) => string
type SerializerCompiler = (route: ResponseSchemaRoute) => Serialize
type SerializerFactory = (externalSchemas: unknown, serializerOpts: unknown) => SerializerCompiler

const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'))
const serializerSelector = fromFastify('@fastify/fast-json-stringify-compiler') as () => SerializerFactory

/** Fastify's serializer factory, compiling each schema on first use (pass as `schemaController.compilersFactory.buildSerializer`). */
export function lazySerializerFactory (): SerializerFactory {
  const build = serializerSelector()
  return (externalSchemas, serializerOpts) => {
    const compile = build(externalSchemas, serializerOpts)
    return route => {
      let serialize: Serialize | undefined
      return data => (serialize ??= compile(route))(data)
    }
  }
}

/** Fastify's serializer factory as it is, compiling each schema when asked (the tests check every schema with it). */
export function eagerSerializerFactory (): SerializerFactory {
  return serializerSelector()
}
