import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TokenizerFormatError } from '../../errors.js';
import { modelsDir } from '../../../test-support/fixtures/paths.js';
import { BOS, EOS, Tokenizer, Utf8Stream } from './tokenizer.js';

const file = new Uint8Array(readFileSync(resolve(modelsDir, 'tok512.bin')));
const tok = Tokenizer.parse(file, 512);

describe('Tokenizer.parse', () => {
  it('reads tok512.bin', () => {
    expect(tok.vocabSize).toBe(512);
    expect(tok.maxTokenLength).toBe(7);
    expect(new TextDecoder().decode(tok.pieces[3])).toBe('<0x00>');
    expect(new TextDecoder().decode(tok.pieces[258])).toBe('<0xFF>');
  });

  it('says how many entries the file has when the vocab disagrees', () => {
    expect(() => Tokenizer.parse(file, 511)).toThrow(/tokenizer has 512 entries but the model's vocab is 511/);
    expect(() => Tokenizer.parse(file, 513)).toThrow(/tokenizer has 512 entries but the model's vocab is 513/);
    expect(() => Tokenizer.parse(file, 32000)).toThrow(TokenizerFormatError);
  });

  it('rejects bad lengths and stray bytes', () => {
    const f = (bytes: number[]) => new Uint8Array(new Int32Array(bytes).buffer);
    // max_token_length 4, entry: score 0, len -1
    expect(() => Tokenizer.parse(f([4, 0, -1]), 1)).toThrow(/negative length -1/);
    expect(() => Tokenizer.parse(f([4, 0, 100, 0]), 1)).toThrow(/needs 100 bytes at byte 12, but the file ends at byte 16/);
    const one = f([4, 0, 4, 0x41414141]);
    expect(Tokenizer.parse(one, 1).pieces[0]).toEqual(new Uint8Array([65, 65, 65, 65]));
    expect(() => Tokenizer.parse(new Uint8Array([...one, 1, 2, 3]), 1)).toThrow(/more than 1 entries \(3 bytes left over\)/);
    expect(() => Tokenizer.parse(new Uint8Array(2), 1)).toThrow(TokenizerFormatError);
    expect(() => Tokenizer.parse(file, 0)).toThrow(TokenizerFormatError);
  });
});

/** The error `fn` throws (undefined when it returns). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

/** Byte offset where each entry of tok512.bin starts (after the 4-byte max_token_length). */
const entryStarts: number[] = [];
for (let off = 4; off < file.byteLength; off += 8 + new DataView(file.buffer, file.byteOffset).getInt32(off + 4, true)) entryStarts.push(off);

describe('Tokenizer.parse on bad files', () => {
  it('rejects tok512.bin cut anywhere: inside an entry header, inside a piece, or at an entry boundary', () => {
    const e100 = entryStarts[100]!;
    const cases: [number, RegExp][] = [
      [0, /file is 0 bytes/],
      [3, /file is 3 bytes/],
      [4, /the tokenizer has 0 entries but the model's vocab is 512/],
      [e100, /the tokenizer has 100 entries but the model's vocab is 512/],
      [e100 + 5, /the tokenizer has 100 entries and 5 stray bytes but the model's vocab is 512/],
      [e100 + 9, /entry 100 needs \d+ bytes at byte \d+, but the file ends at byte \d+/],
      [file.byteLength - 1, new RegExp(`entry 511 needs \\d+ bytes at byte \\d+, but the file ends at byte ${file.byteLength - 1}`)],
    ];
    for (const [n, msg] of cases) {
      const e = thrown(() => Tokenizer.parse(file.subarray(0, n), 512));
      expect(e, `cut at ${n}`).toBeInstanceOf(TokenizerFormatError);
      expect((e as TokenizerFormatError).code).toBe('TOKENIZER_FORMAT');
      expect((e as Error).message, `cut at ${n}`).toMatch(msg);
    }
  });

  it('rejects a negative length and a length past the end, naming the entry and byte', () => {
    const neg = file.slice();
    new DataView(neg.buffer).setInt32(entryStarts[7]! + 4, -3, true);
    expect(() => Tokenizer.parse(neg, 512)).toThrow(new RegExp(`entry 7 has a negative length -3 at byte ${entryStarts[7]! + 4}`));
    const past = file.slice();
    new DataView(past.buffer).setInt32(entryStarts[300]! + 4, 0x7fffffff, true);
    expect(() => Tokenizer.parse(past, 512)).toThrow(/entry 300 needs 2147483647 bytes/);
    const zeroMax = file.slice();
    new DataView(zeroMax.buffer).setInt32(0, -1, true);
    expect(() => Tokenizer.parse(zeroMax, 512)).toThrow(/max_token_length must be > 0, got -1/);
  });

  it('a tokenizer for a smaller vocab: leftover bytes say the vocab sizes do not match and what to do', () => {
    for (const vocab of [32, 256, 511]) {
      const e = thrown(() => Tokenizer.parse(file, vocab)) as TokenizerFormatError;
      expect(e).toBeInstanceOf(TokenizerFormatError);
      expect(e.message).toContain(`the vocab sizes do not match: the tokenizer has 512 entries but the model's vocab is ${vocab}`);
      expect(e.remedy).toContain(`Use the tokenizer exported with this model (one with exactly ${vocab} entries)`);
    }
    // Leftovers that are not whole entries are still reported as a vocab mismatch.
    const tail = new Uint8Array([...file, 9, 9, 9]);
    expect(() => Tokenizer.parse(tail, 512)).toThrow(/vocab sizes do not match: the tokenizer has more than 512 entries \(3 bytes left over\)/);
  });

  it('a tokenizer for a larger vocab: the missing entries are counted, nothing is allocated for the claimed size', () => {
    for (const vocab of [513, 32000, 2 ** 31, Number.MAX_SAFE_INTEGER]) {
      const e = thrown(() => Tokenizer.parse(file, vocab)) as TokenizerFormatError;
      expect(e).toBeInstanceOf(TokenizerFormatError);
      expect(e.message).toContain(`the vocab sizes do not match: the tokenizer has 512 entries but the model's vocab is ${vocab}`);
    }
    for (const vocab of [0, -1, 1.5, NaN, Infinity, 2 ** 60]) expect(() => Tokenizer.parse(file, vocab)).toThrow(TokenizerFormatError);
  });

  it('all zeros and random bytes are refused', () => {
    expect(() => Tokenizer.parse(new Uint8Array(6144), 512)).toThrow(/max_token_length must be > 0, got 0/);
    let x = 12345;
    const random = new Uint8Array(6144).map(() => ((x = (x * 1103515245 + 12345) >>> 0) >>> 24));
    expect(() => Tokenizer.parse(random, 512)).toThrow(TokenizerFormatError);
  });
});

describe('Tokenizer.parse under fuzzing', () => {
  /** A parse may only give a tokenizer of the asked size or a TokenizerFormatError. */
  const parsesOrRefuses = (bytes: Uint8Array, vocab: number): void => {
    let t: Tokenizer;
    try {
      t = Tokenizer.parse(bytes, vocab);
    } catch (e) {
      if (!(e instanceof TokenizerFormatError)) throw e;
      return;
    }
    expect(t.vocabSize).toBe(vocab);
    expect(t.pieces).toHaveLength(vocab);
  };
  const vocabs = fc.oneof(fc.integer({ min: -4, max: 600 }), fc.constantFrom(512, 2 ** 31, 2 ** 53, -(2 ** 31)), fc.double());

  it('random bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 512 }), vocabs, (b, v) => parsesOrRefuses(b, v)), { numRuns: 500, seed: 7 });
  });

  it('small well-formed-looking files: a max length, then entries with fuzzed lengths', () => {
    const entry = fc.record({ score: fc.float(), len: fc.oneof(fc.integer({ min: -2, max: 12 }), fc.integer()), piece: fc.uint8Array({ maxLength: 12 }) });
    const fileOf = fc.record({ max: fc.integer(), entries: fc.array(entry, { maxLength: 40 }), tail: fc.uint8Array({ maxLength: 8 }) }).map(({ max, entries, tail }) => {
      const parts: number[] = [];
      const i32 = (n: number) => parts.push(n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff);
      i32(max);
      for (const e of entries) {
        const f = new Uint8Array(new Float32Array([e.score]).buffer);
        parts.push(...f);
        i32(e.len);
        parts.push(...e.piece);
      }
      parts.push(...tail);
      return new Uint8Array(parts);
    });
    fc.assert(fc.property(fileOf, fc.integer({ min: -1, max: 45 }), (b, v) => parsesOrRefuses(b, v)), { numRuns: 500, seed: 11 });
  });

  it('tok512.bin with flipped bytes, cut short or extended', () => {
    const mutation = fc.record({
      flips: fc.array(fc.record({ at: fc.nat({ max: file.byteLength - 1 }), value: fc.integer({ min: 0, max: 255 }) }), { maxLength: 6 }),
      cut: fc.nat({ max: file.byteLength }),
      extra: fc.uint8Array({ maxLength: 16 }),
    });
    fc.assert(
      fc.property(mutation, fc.constantFrom(512, 511, 513, 1), ({ flips, cut, extra }, v) => {
        const b = new Uint8Array([...file.subarray(0, cut), ...extra]);
        for (const f of flips) if (f.at < b.length) b[f.at] = f.value;
        parsesOrRefuses(b, v);
      }),
      { numRuns: 300, seed: 13 },
    );
  });
});

describe('encode (ids from run.c)', () => {
  it('encodes the empty prompt as BOS only', () => {
    expect(tok.encode('')).toEqual([BOS]);
    expect(tok.encode('', true, true)).toEqual([BOS, EOS]);
    expect(tok.encode('', false, false)).toEqual([]);
  });

  it('encodes "Once upon a time"', () => {
    expect(tok.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
    expect(tok.encode('Once upon a time', false, true)).toEqual([403, 407, 261, 378, 2]);
  });

  it('matches run.c on punctuation, repeated spaces and non-ASCII', () => {
    expect(tok.encode('Hello, world! 123')).toEqual([1, 346, 306, 414, 432, 263, 304, 341, 443, 410, 475, 479, 472]);
    expect(tok.encode('  two  spaces')).toEqual([1, 410, 410, 259, 424, 414, 410, 262, 427, 412, 331, 419]);
    expect(tok.encode('The café')).toEqual([1, 291, 280, 412, 431, 485]);
  });

  it('falls back to byte tokens (+3) for code points not in the vocab', () => {
    // U+1F600 is F0 9F 98 80
    expect(tok.encode('😀')).toEqual([1, 410, 0xf0 + 3, 0x9f + 3, 0x98 + 3, 0x80 + 3]);
    expect(tok.encode('héllo 😀 world')).toEqual([1, 270, 485, 306, 414, 410, 243, 162, 155, 131, 263, 304, 341]);
  });
});

describe('decode', () => {
  it('strips the space after BOS and maps byte pieces to bytes', () => {
    expect(new TextDecoder().decode(tok.decode(BOS, 403))).toBe('Once');
    expect(new TextDecoder().decode(tok.decode(403, 407))).toBe(' upon');
    expect(tok.decode(5, 0xf0 + 3)).toEqual(new Uint8Array([0xf0]));
    expect(() => tok.decode(1, 512)).toThrow(RangeError);
  });

  it('round-trips text, including byte fallback', () => {
    for (const text of ['Once upon a time', 'héllo 😀 world', 'Tom said, "Hi!"\nThe end.', '日本']) {
      const ids = tok.encode(text);
      expect(tok.decodeText(ids.slice(1), ids[0])).toBe(text);
    }
  });

  it('holds back a split code point until it is complete', () => {
    const s = new Utf8Stream();
    expect(s.push(new Uint8Array([0xf0, 0x9f]))).toBe('');
    expect(s.push(new Uint8Array([0x98]))).toBe('');
    expect(s.push(new Uint8Array([0x80, 0x21]))).toBe('😀!');
    expect(s.push(new Uint8Array([0xe6]))).toBe('');
    expect(s.flush()).toBe('\uFFFD');
  });
});

describe('encode on long text', () => {
  it('stays fast and matches a plain run.c-style merge loop', () => {
    const text = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park. '.repeat(12);
    const naive = (): number[] => {
      // run.c's loop verbatim: rescan every pair after each merge
      const t = tok.encode(text, true, false).slice(0, 0);
      const bytes = new TextEncoder().encode(text);
      t.push(BOS, tok.pieceId(' '));
      for (const b of bytes) t.push(tok.pieceId(new Uint8Array([b])));
      for (;;) {
        let best = Math.fround(-1e10), bestId = -1, bestIdx = -1;
        for (let i = 0; i < t.length - 1; i++) {
          const id = tok.pieceId(new Uint8Array([...tok.pieces[t[i]!]!, ...tok.pieces[t[i + 1]!]!]));
          if (id !== -1 && tok.scores[id]! > best) { best = tok.scores[id]!; bestId = id; bestIdx = i; }
        }
        if (bestIdx === -1) return t;
        t.splice(bestIdx, 2, bestId);
      }
    };
    const t0 = performance.now();
    const fast = tok.encode(text);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(fast).toEqual(naive());
  });
});
