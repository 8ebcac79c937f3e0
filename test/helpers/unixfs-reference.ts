/**
 * An IPFS file CID computed independently of the node's importer, written
 * from the specs alone (UnixFS `Data` and dag-pb `PBNode` protobufs, kubo's
 * `--cid-version=1 --raw-leaves=true --chunker=size-262144` balanced layout):
 * the tests hold the node's CIDs against this, and this against the original's
 * vectors (docs/design/original.md#hash-spellings). Nothing here comes from ipfs-unixfs-importer, @ipld/dag-pb or
 * multiformats: protobuf, varints and base32 are spelled out.
 *
 * - Leaves: 262 144-byte chunks, each a raw block (CID `01 55 12 20 ‖ sha256`).
 * - One leaf (or none: the empty file is one empty leaf): that leaf is the file.
 * - More: leaves are grouped 174 at a time under dag-pb nodes, those nodes 174
 *   at a time under the next level, until one node is left (kubo's balanced
 *   builder fills each subtree before starting the next: the same tree).
 * - A node: `PBNode { Links = 2 (each: Hash = 1, Name = 2 (""), Tsize = 3); Data = 1 }`,
 *   links first; its Data is UnixFS `{ Type = 1: File (2), filesize = 3, blocksizes = 4 (one per link, not packed) }`.
 *   A link's Tsize is the bytes of the block it names plus, for a node, its links' Tsizes.
 */
import { createHash } from 'node:crypto'

const CHUNK = 262_144
const FANOUT = 174

interface Block { cid: Buffer, tsize: number, fileBytes: number }

function varint (n: number): Buffer {
  const out: number[] = []
  let v = n
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80)
    v = Math.floor(v / 0x80)
  }
  out.push(v)
  return Buffer.from(out)
}

/** A length-delimited protobuf field. */
function bytesField (field: number, body: Buffer): Buffer {
  return Buffer.concat([varint((field << 3) | 2), varint(body.length), body])
}

function varintField (field: number, n: number): Buffer {
  return Buffer.concat([varint(field << 3), varint(n)])
}

function sha256 (b: Buffer): Buffer {
  return createHash('sha256').update(b).digest()
}

function cidBytes (codec: number, digest: Buffer): Buffer {
  return Buffer.concat([varint(1), varint(codec), varint(0x12), varint(32), digest])
}

function leaf (bytes: Buffer): Block {
  return { cid: cidBytes(0x55, sha256(bytes)), tsize: bytes.length, fileBytes: bytes.length }
}

function node (children: Block[]): Block {
  const fileBytes = children.reduce((s, c) => s + c.fileBytes, 0)
  const unixfs = Buffer.concat([varintField(1, 2), varintField(3, fileBytes), ...children.map(c => varintField(4, c.fileBytes))])
  const links = children.map(c => bytesField(2, Buffer.concat([bytesField(1, c.cid), bytesField(2, Buffer.alloc(0)), varintField(3, c.tsize)])))
  const block = Buffer.concat([...links, bytesField(1, unixfs)])
  return { cid: cidBytes(0x70, sha256(block)), tsize: block.length + children.reduce((s, c) => s + c.tsize, 0), fileBytes }
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567'

/** RFC 4648 base32, lower case, no padding, with the multibase prefix `b`. */
export function base32Cid (bytes: Buffer): string {
  let out = 'b'
  let bits = 0
  let acc = 0
  for (const byte of bytes) {
    acc = (acc << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += ALPHABET[(acc >>> (bits - 5)) & 31]
      bits -= 5
    }
    acc &= (1 << bits) - 1
  }
  if (bits > 0) out += ALPHABET[(acc << (5 - bits)) & 31]
  return out
}

/** The IPFS CID of `bytes` as kubo makes it with raw leaves and 256 KiB chunks. */
export function referenceIpfsCid (bytes: Buffer): string {
  let level: Block[] = []
  for (let at = 0; at < bytes.length || at === 0; at += CHUNK) level.push(leaf(bytes.subarray(at, at + CHUNK)))
  while (level.length > 1) {
    const up: Block[] = []
    for (let i = 0; i < level.length; i += FANOUT) up.push(node(level.slice(i, i + FANOUT)))
    level = up
  }
  return base32Cid(level[0].cid)
}

/** The raw-codec sha2-256 CID of `bytes` (`bafkrei…`). */
export function referenceSha256Cid (bytes: Buffer): string {
  return base32Cid(cidBytes(0x55, sha256(bytes)))
}
