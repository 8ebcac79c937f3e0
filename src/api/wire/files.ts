/**
 * File bytes by CID and the file routes around them: `/file/{cid}`,
 * `/api/file/{cid}/info`, `POST /file/cid`, `POST /api/files/register`,
 * `GET /api/files/tuples`.
 */
import { StringEnum, Type, type Static } from './kit.js'

export const PathBody = Type.Object({ path: Type.String({ minLength: 1, maxLength: 4096, description: 'path relative to FILES_PATH' }) })

/** The byte routes' answers, for the OpenAPI document (the bodies are file bytes). */
export const ByteResponses = {
  200: Type.String({ description: 'the whole file', format: 'binary' }),
  206: Type.String({ description: 'one byte range', format: 'binary' }),
  304: Type.Null({ description: 'not modified' })
}

/** GET /api/file/{cid}/info */
export const FileInfo = Type.Object({
  exists: Type.Boolean(),
  contentType: Type.Optional(Type.String()),
  size: Type.Optional(Type.Integer()),
  filePath: Type.Optional(Type.String({ description: 'relative to FILES_PATH' }))
})
export type FileInfo = Static<typeof FileInfo>

export const CidOfFile = Type.Object({ cid: Type.String(), path: Type.String(), size: Type.Integer() })

export const RegisterReply = Type.Object({ root: Type.String(), cid: Type.String(), created: Type.Boolean(), path: Type.String(), size: Type.Integer() })

export const TuplesQuery = Type.Object({ summary: Type.Optional(StringEnum(['0', '1', 'true', 'false'])) }, { additionalProperties: false })

/** Written by the route itself, in pages (tens of MB for a large library): this schema is the document's. */
export const Tuples = Type.Object({
  files: Type.Optional(Type.Array(Type.Object({
    hashId: Type.String(),
    filePath: Type.String(),
    sizeByte: Type.Integer(),
    mtimeNano: Type.Integer({ description: 'exact: written as JSON digits, beyond 2^53' })
  }), { description: 'absent with ?summary=1' })),
  count: Type.Integer(),
  totalSize: Type.Integer()
})
