/**
 * The API's schemas (src/api/wire/) describe objects other modules build:
 * the mesh's status views, the watcher's status, search's requests and
 * answers. Those modules keep their own interfaces; the routes hand their
 * objects to the serializer as they are. These checks hold each schema's
 * type and the interface it describes to the same fields with the same
 * types, both ways: a field added on either side, or a type or nullability
 * changed, fails `npm run typecheck` here (the assertions are types; vitest
 * runs them as no-ops).
 */
import { describe, expectTypeOf, it } from 'vitest'
import type { Static } from 'typebox'
import type { MeshJoinView, MeshPeerView, MeshReachView, MeshService, MeshView, PeerByteFigures } from '../../src/mesh/index.js'
import type { ListResponse as IndexList, SearchRequest, SearchResponse as IndexAnswer } from '../../src/search/types.js'
import type { FullHashStatus as HashFigures, RegisterResult, ScanSummary, WatcherProgress as ScanFigures,
  WatcherStatus as WatcherFigures } from '../../src/watcher/types.js'
import type {
  MeshClock, MeshCopy, MeshDigest, MeshJoin, MeshMember, MeshPeer, MeshPortMapping, MeshReach, MeshRelay, MeshSelf, MeshStatus, MeshTransferPeer
} from '../../src/api/wire/mesh.js'
import type { ListResponse, SearchBody, SearchResponse } from '../../src/api/wire/metadata.js'
import type { RegisterReply } from '../../src/api/wire/files.js'
import type { FullHashStatus, ScanReply, WatcherProgress, WatcherStatus } from '../../src/api/wire/watcher.js'

/**
 * True when A and B are assignable both ways and name the same fields,
 * besides `Only`: fields one side names on purpose (said where used).
 */
type Same<A, B, Only extends PropertyKey = never> =
  [A] extends [B]
    ? [B] extends [A]
        ? [Exclude<keyof A, keyof B | Only>, Exclude<keyof B, keyof A | Only>] extends [never, never] ? true : false
        : false
    : false

describe('the API schemas and the interfaces they describe', () => {
  it('agree for the mesh\'s status (GET /api/mesh and the others)', () => {
    // The route adds search's build figures to the join; the mesh's own view has none.
    const SEARCH = 'searchBuilding' as const
    expectTypeOf<Same<Omit<MeshView, 'join'>, Omit<MeshStatus, 'join'>>>().toEqualTypeOf<true>()
    expectTypeOf<Same<MeshJoinView, Omit<MeshJoin, typeof SEARCH | 'searchIndexed' | 'searchToIndex'>>>().toEqualTypeOf<true>()
    expectTypeOf<Same<MeshView['self'], MeshSelf>>().toEqualTypeOf<true>()
    expectTypeOf<Same<MeshView['self']['clock'], MeshClock>>().toEqualTypeOf<true>()
    // `reconciling` comes with the core's peer status the mesh spreads into its view; MeshPeerView does not name it.
    expectTypeOf<Same<MeshPeerView, MeshPeer, 'reconciling'>>().toEqualTypeOf<true>()
    expectTypeOf<Same<MeshView['members'][number], MeshMember>>().toEqualTypeOf<true>()
    expectTypeOf<Same<NonNullable<MeshView['copy']>, MeshCopy>>().toEqualTypeOf<true>()
    expectTypeOf<Same<MeshReachView, MeshReach>>().toEqualTypeOf<true>()
    expectTypeOf<Same<NonNullable<MeshReachView['upnp']>, MeshPortMapping>>().toEqualTypeOf<true>()
    expectTypeOf<Same<NonNullable<MeshReachView['relay']>, MeshRelay>>().toEqualTypeOf<true>()
    expectTypeOf<Same<PeerByteFigures, MeshTransferPeer>>().toEqualTypeOf<true>()
    expectTypeOf<Same<ReturnType<MeshService['digest']>, MeshDigest>>().toEqualTypeOf<true>()
  })

  it('agree for the watcher\'s status, its scans and a registered file', () => {
    expectTypeOf<Same<WatcherFigures, WatcherStatus>>().toEqualTypeOf<true>()
    expectTypeOf<Same<ScanFigures, WatcherProgress>>().toEqualTypeOf<true>()
    expectTypeOf<Same<HashFigures, FullHashStatus>>().toEqualTypeOf<true>()
    expectTypeOf<Same<ScanSummary, NonNullable<ScanReply['summary']>>>().toEqualTypeOf<true>()
    expectTypeOf<Same<RegisterResult, Static<typeof RegisterReply>>>().toEqualTypeOf<true>()
  })

  it('agree for search: the body it takes and the answers it gives', () => {
    expectTypeOf<Same<SearchRequest, Static<typeof SearchBody>>>().toEqualTypeOf<true>()
    // The route adds each hit's canonical CID; search's own hit has none.
    expectTypeOf<Same<IndexAnswer['results'][number], Omit<SearchResponse['results'][number], 'canonical_cid'>>>().toEqualTypeOf<true>()
    expectTypeOf<Same<Omit<IndexAnswer, 'results'>, Omit<SearchResponse, 'results'>>>().toEqualTypeOf<true>()
    expectTypeOf<Same<IndexList, Static<typeof ListResponse>>>().toEqualTypeOf<true>()
  })
})
