/**
 * The fold invariant the field index relies on: per code point, folding keeps
 * the length and keeps ASCII and non-ASCII apart, and on ASCII it is exactly
 * SQLite's lower(). If it broke, a LIKE built from a folded value could miss
 * a stored value (and the equivalence test might not happen to notice).
 */
import { describe, expect, it } from 'vitest'
import { equalityProbes, likePattern } from '../../src/search/field-index.js'
import { asciiLower, fold, rawVariants, splitFields, trimSpace } from '../../src/search/fold.js'

describe('fold', () => {
  it('maps every code point to one code point, ASCII to ASCII and non-ASCII to non-ASCII', () => {
    for (let cp = 0; cp <= 0x10ffff; cp += cp < 0x20000 ? 1 : 97) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue
      const ch = String.fromCodePoint(cp)
      const f = fold(ch)
      expect([...f].length, `U+${cp.toString(16)}`).toBe(1)
      expect(f.codePointAt(0)! < 0x80, `U+${cp.toString(16)}`).toBe(cp < 0x80)
      if (cp < 0x80) expect(f).toBe(asciiLower(ch))
    }
  })

  it('lower-cases letters of every script it can, and keeps the exceptions', () => {
    expect(fold('ÉCOLE ΣΟΦΙΑ Straße ẞ ЖУК')).toBe('école σοφια straße ß жук')
    expect(fold('İ\u212A')).toBe('İ\u212A') // would become ASCII: kept
  })

  it('finds every raw spelling of a folded character', () => {
    expect(rawVariants('é').sort()).toEqual(['É', 'é'].sort())
    expect(rawVariants('ß').sort()).toEqual(['ß', 'ẞ'].sort())
  })

  it('splits and trims on the whitespace Go does, not on zero-width no-break space', () => {
    expect(splitFields(' a\u00a0b\u3000c\u2028d\ufeffe ')).toEqual(['a', 'b', 'c', 'd\ufeffe'])
    expect(trimSpace('\u0085 x y \u202f')).toBe('x y')
  })
})

describe('LIKE probes', () => {
  it('escape the LIKE wildcards and leave non-ASCII characters to _', () => {
    expect(likePattern('50%_a\\b')).toBe('50\\%\\_a\\\\b')
    expect(likePattern('école')).toBe('_cole')
  })

  it('seek on the longest ASCII prefix, or on each raw spelling of a leading non-ASCII character', () => {
    expect(equalityProbes('abc')).toEqual([{ eq: 'abc' }])
    expect(equalityProbes('ab_é')).toEqual([{ lo: 'ab_', hi: 'ab`', like: 'ab\\__' }])
    expect(equalityProbes('éa').map(p => 'lo' in p ? p.lo : '').sort()).toEqual(['Éa', 'éa'].sort())
  })
})
