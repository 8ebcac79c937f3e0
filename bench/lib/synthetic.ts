/**
 * Realistic synthetic library records (about 40 fields, as the original's
 * library held: paths, sizes, CIDs, tmdb/imdb ids, file info and streams),
 * deterministic by index so benchmarks and their ceilings write the same rows.
 */
import { createHash } from 'node:crypto'
import { encodeCidV1, midhashCidFromDigest } from '../../src/cid/index.js'

const WORDS = ['the', 'night', 'river', 'last', 'city', 'shadow', 'garden', 'winter', 'empire', 'stone', 'blue', 'silent', 'house', 'road', 'star', 'ghost',
  'king', 'dream', 'fire', 'island']
const GENRES = ['Drama', 'Comedy', 'Action', 'Thriller', 'Documentary', 'Animation', 'Horror', 'Romance', 'Science Fiction', 'Family']
const CODECS = ['h264', 'hevc', 'av1', 'vp9']
const LANGS = ['eng', 'fre', 'ger', 'spa', 'jpn', 'ita']

function digest (i: number, salt: string): Buffer {
  return createHash('sha256').update(`${salt}:${i}`).digest()
}

export interface SyntheticRecord {
  /** The midhash CID the record is addressed by. */
  cid: string
  fields: Record<string, string>
}

export function syntheticRecord (i: number): SyntheticRecord {
  const w = (k: number): string => WORDS[(i * 7 + k * 13) % WORDS.length]
  const title = `${w(1)} ${w(2)} ${w(3)}`.replace(/^./, c => c.toUpperCase()) + (i % 5 === 0 ? ` ${i}` : '')
  const year = String(1950 + (i % 75))
  const mid = midhashCidFromDigest(digest(i, 'mid'))
  const sha = encodeCidV1(0x55, 0x12, digest(i, 'sha'))
  const lang = LANGS[i % LANGS.length]
  const fileName = `${title.replace(/ /g, '.')}.${year}.1080p.mkv`
  const fields: Record<string, string> = {
    title,
    originaltitle: title,
    fileName,
    filePath: `/files/watch/movies/${title} (${year})/${fileName}`,
    sizeByte: String(700_000_000 + (i * 7919) % 9_000_000_000),
    mtimeNano: String(1_700_000_000_000_000_000n + BigInt(i) * 1_000_000_007n),
    type: i % 3 === 0 ? 'episode' : 'movie',
    year,
    fileType: 'video',
    mimeType: 'video/x-matroska',
    extension: 'mkv',
    videoType: i % 7 === 0 ? 'tv,anime' : 'movie',
    domain: 'screen',
    workForm: i % 3 === 0 ? 'serial' : 'standalone',
    contentKind: i % 3 === 0 ? 'episode' : 'movie',
    imdbid: `tt${String(1_000_000 + i).padStart(7, '0')}`,
    [`genres/${GENRES[i % GENRES.length]}`]: 'true',
    [`genres/${GENRES[(i * 3 + 1) % GENRES.length]}`]: 'true',
    [`titles/${lang}`]: title,
    [`description/${lang}`]: `A story about ${w(4)} and ${w(5)} in the ${w(6)} ${w(7)}.`,
    'fileinfo/duration': String(1200 + (i % 8000) + 0.5),
    'fileinfo/formatName': 'matroska,webm',
    'fileinfo/bitrate': String(2_000_000 + (i % 30) * 100_000),
    'fileinfo/streamdetails/video/0/codec': CODECS[i % CODECS.length],
    'fileinfo/streamdetails/video/0/width': '1920',
    'fileinfo/streamdetails/video/0/height': '1080',
    'fileinfo/streamdetails/video/0/aspect': '1.78',
    'fileinfo/streamdetails/audio/0/codec': 'aac',
    'fileinfo/streamdetails/audio/0/channels': String(2 + (i % 3) * 2),
    'fileinfo/streamdetails/audio/0/language': lang,
    'fileinfo/streamdetails/subtitle/0/language': LANGS[(i + 1) % LANGS.length],
    'stream/0': JSON.stringify({ type: 'video', codec: CODECS[i % CODECS.length], index: 0, width: 1920, height: 1080, frameRate: '24000/1001' }),
    'stream/1': JSON.stringify({ type: 'audio', codec: 'aac', index: 1, language: lang, channelLayout: 'stereo', sampleRate: 48000 }),
    'stream/2': JSON.stringify({ type: 'subtitle', codec: 'subrip', index: 2, language: LANGS[(i + 1) % LANGS.length] }),
    poster: encodeCidV1(0x55, 0x12, digest(i, 'poster')),
    [`source/gateway:node${i % 4}.example`]: 'true',
    [`cids/${mid}`]: 'true',
    [`cids/${sha}`]: 'true'
  }
  if (i % 10 !== 0) fields.tmdbid = String(10_000 + i)
  if (i % 3 === 0) fields[`cids/${encodeCidV1(0x70, 0x12, digest(i, 'ipfs'))}`] = 'true'
  return { cid: mid, fields }
}

/** The fields a client may write through the API: all but the location fields, which only a node's watcher writes (400 otherwise). */
export function apiFields (r: SyntheticRecord): Record<string, string> {
  const { filePath: _p, sizeByte: _s, mtimeNano: _m, ...rest } = r.fields
  return rest
}
