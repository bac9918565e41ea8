import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { decodeShortUtf8 } from './utf8-short.js';

const text = new TextDecoder('utf-8', { ignoreBOM: true });
const decode = (b: Uint8Array) => decodeShortUtf8(b, 0, b.length);

describe('decodeShortUtf8', () => {
  it('gives TextDecoder\'s string for every 1- and 2-byte input, and for every 3-byte one led by E0, ED, EF', () => {
    const one = new Uint8Array(1);
    for (let a = 0; a < 256; a++) {
      one[0] = a;
      const s = decode(one);
      expect(s === undefined ? a >= 0x80 : s === text.decode(one)).toBe(true);
    }
    const two = new Uint8Array(2);
    let decoded = 0;
    for (let a = 0; a < 256; a++) for (let b = 0; b < 256; b++) {
      two[0] = a, two[1] = b;
      const s = decode(two);
      if (s !== undefined) {
        decoded++;
        if (s !== text.decode(two)) throw new Error(`${a} ${b}: ${s}`);
      } else if (!text.decode(two).includes('\uFFFD')) throw new Error(`well-formed ${a} ${b} not decoded`);
    }
    expect(decoded).toBe(128 * 128 + 30 * 64); // ASCII pairs and every C2–DF lead with a continuation byte
    const three = new Uint8Array(3);
    for (const a of [0xe0, 0xed, 0xef, 0xf0, 0xf4]) for (let b = 0; b < 256; b++) for (let c = 0x70; c < 0xc8; c++) {
      three[0] = a, three[1] = b, three[2] = c;
      const s = decode(three);
      const want = text.decode(three);
      if (s !== undefined ? s !== want : !want.includes('\uFFFD')) throw new Error(`${a} ${b} ${c}: ${s} vs ${want}`);
    }
  });

  it('decodes any short well-formed string (surrogate pairs, BOM kept) and refuses what TextDecoder would repair', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 16 }), (s) => {
      const b = new TextEncoder().encode(s);
      if (b.length <= 64) expect(decode(b)).toBe(s);
    }), { numRuns: 2000 });
    fc.assert(fc.property(fc.uint8Array({ maxLength: 24 }), (b) => {
      const s = decode(b);
      if (s !== undefined) expect(s).toBe(text.decode(b));
      else expect(text.decode(b)).toContain('\uFFFD');
    }), { numRuns: 5000 });
    expect(decode(Uint8Array.of(0xef, 0xbb, 0xbf, 0x61))).toBe('\uFEFFa');
    expect(decode(new Uint8Array(65).fill(0x61))).toBeUndefined();
    expect(decodeShortUtf8(Uint8Array.of(0x61, 0xc3, 0xa9, 0x62), 1, 3)).toBe('é');
  });
});
