/**
 * Short well-formed UTF-8 strings decoded in JavaScript, for the hundreds of thousands of a
 * GGUF vocabulary: a TextDecoder call costs ~0.5 µs each in Chromium, this ~0.1 µs (bench/NOTES.md,
 * ggufhdr). Anything else (ill-formed bytes, long strings) is left to TextDecoder, so the result
 * is always TextDecoder's.
 */

/** Longest string decoded here; longer ones amortise TextDecoder's call. */
const SHORT = 64;

const units: number[] = [];

/** bytes[start, end) as a string, or undefined when they are not short, well-formed UTF-8. */
export function decodeShortUtf8(bytes: Uint8Array, start: number, end: number): string | undefined {
  if (end - start > SHORT) return undefined;
  units.length = 0;
  for (let i = start; i < end;) {
    const c = bytes[i]!;
    if (c < 0x80) {
      units.push(c);
      i += 1;
      continue;
    }
    // The lead byte's sequence length and its second byte's range (Unicode Table 3-7: no overlongs, surrogates or > U+10FFFF).
    let n: number, lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
      n = 3;
      if (c === 0xe0) lo = 0xa0;
      else if (c === 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 4;
      if (c === 0xf0) lo = 0x90;
      else if (c === 0xf4) hi = 0x8f;
    } else return undefined;
    if (i + n > end) return undefined;
    const c1 = bytes[i + 1]!;
    if (c1 < lo || c1 > hi) return undefined;
    let cp = ((c & (0x7f >> n)) << 6) | (c1 & 0x3f);
    for (let k = 2; k < n; k++) {
      const ck = bytes[i + k]!;
      if ((ck & 0xc0) !== 0x80) return undefined;
      cp = (cp << 6) | (ck & 0x3f);
    }
    if (cp < 0x10000) units.push(cp);
    else units.push(0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
    i += n;
  }
  return String.fromCharCode.apply(null, units);
}
