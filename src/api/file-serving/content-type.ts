/**
 * Content types by extension: the original's table (docs/design/original.md#routes) plus a few
 * audio and subtitle types a media library serves; anything else is
 * application/octet-stream (and `nosniff` keeps browsers from guessing).
 */
import path from 'node:path'

const TYPES: Record<string, string> = {
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
  '.mp4': 'video/mp4',
  '.mkv': 'video/x-matroska',
  '.avi': 'video/x-msvideo',
  '.webm': 'video/webm',
  '.mov': 'video/quicktime',
  '.ts': 'video/mp2t',
  '.m3u8': 'application/vnd.apple.mpegurl',
  '.mp3': 'audio/mpeg',
  '.flac': 'audio/flac',
  '.m4a': 'audio/mp4',
  '.ogg': 'audio/ogg',
  '.srt': 'application/x-subrip',
  '.vtt': 'text/vtt',
  '.pdf': 'application/pdf',
  '.epub': 'application/epub+zip'
}

export function contentTypeFor (file: string): string {
  return TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream'
}
