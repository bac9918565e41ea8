import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TokenizerFormatError } from '../../errors.js';
import { modelsDir } from '../fixtures/paths.js';
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
