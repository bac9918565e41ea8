import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ModelFormatError } from '../../errors.js';
import { modelsDir, readArrayBuffer } from '../../../test-support/fixtures/paths.js';
import { encodeLlama2cHeader, LLAMA2C_HEADER_BYTES, llama2cFileSize, loadLlama2c, parseLlama2cHeader } from './llama2c.js';
import type { ModelConfig } from '../config.js';

const modelPath = resolve(modelsDir, 'stories260K.bin');
const fileSize = statSync(modelPath).size;

function header(values: number[]): Uint8Array {
  const b = new Uint8Array(28);
  const v = new DataView(b.buffer);
  values.forEach((x, i) => v.setInt32(i * 4, x, true));
  return b;
}

const stories260K = [64, 172, 5, 8, 4, 512, 512];

describe('parseLlama2cHeader', () => {
  it('reads stories260K from the header bytes and the file size alone', () => {
    const bytes = new Uint8Array(readArrayBuffer(modelPath), 0, LLAMA2C_HEADER_BYTES);
    const { config, tensors } = parseLlama2cHeader(bytes, fileSize);
    expect(config).toEqual({
      dim: 64, hiddenDim: 172, nLayers: 5, nHeads: 8, nKvHeads: 4, vocabSize: 512, seqLen: 512, headSize: 8,
      sharedClassifier: true, normEps: 1e-5, ropeTheta: 10000, ropeStyle: 'interleaved',
    });
    // embedding + 9 per layer + final norm + the aliased classifier
    expect(tensors).toHaveLength(1 + 9 * 5 + 1 + 1);
    const by = new Map(tensors.map((t) => [t.name, t]));
    expect(by.get('tok_embeddings')).toMatchObject({ offset: 28, shape: [512, 64], byteLength: 512 * 64 * 4 });
    // all attention norms come first, then wq of every layer (run.c's layout)
    expect(by.get('layers.0.attention_norm')!.offset).toBe(28 + 512 * 64 * 4);
    expect(by.get('layers.4.attention_norm')!.offset).toBe(28 + (512 * 64 + 4 * 64) * 4);
    expect(by.get('layers.0.attention.wq')).toMatchObject({ offset: 28 + (512 * 64 + 5 * 64) * 4, shape: [64, 64] });
    expect(by.get('layers.1.attention.wq')!.offset).toBe(by.get('layers.0.attention.wq')!.offset + 64 * 64 * 4);
    expect(by.get('layers.0.attention.wk')!.shape).toEqual([32, 64]);
    expect(by.get('layers.0.attention.wv')!.shape).toEqual([32, 64]);
    expect(by.get('layers.0.attention.wo')!.shape).toEqual([64, 64]);
    expect(by.get('layers.0.feed_forward.w1')!.shape).toEqual([172, 64]);
    expect(by.get('layers.0.feed_forward.w2')!.shape).toEqual([64, 172]);
    expect(by.get('layers.0.feed_forward.w3')!.shape).toEqual([172, 64]);
    expect(by.get('output')).toMatchObject({ offset: 28, shape: [512, 64], aliasOf: 'tok_embeddings' });
    // the final norm is followed only by the two unused RoPE tables
    const norm = by.get('norm')!;
    expect(norm.offset + norm.byteLength + 2 * 512 * 4 * 4).toBe(fileSize);
    // per-layer tensors never overlap and are in file order
    const own = tensors.filter((t) => !t.aliasOf);
    for (let i = 1; i < own.length; i++) expect(own[i]!.offset).toBe(own[i - 1]!.offset + own[i - 1]!.byteLength);
  });

  it('places an unshared classifier after the RoPE tables', () => {
    const size = fileSize + 512 * 64 * 4;
    const { config, tensors } = parseLlama2cHeader(header([64, 172, 5, 8, 4, -512, 512]), size);
    expect(config.sharedClassifier).toBe(false);
    expect(config.vocabSize).toBe(512);
    const out = tensors.find((t) => t.name === 'output')!;
    expect(out.aliasOf).toBeUndefined();
    expect(out.offset + out.byteLength).toBe(size);
  });

  it('round-trips the header', () => {
    const { config } = parseLlama2cHeader(header(stories260K), fileSize);
    expect(Array.from(encodeLlama2cHeader(config))).toEqual(Array.from(header(stories260K)));
  });

  const bad: [string, number[], number, RegExp][] = [
    ['a truncated file', stories260K, fileSize - 4, /implies 1056540 bytes, the file has 1056536/],
    ['trailing bytes', stories260K, fileSize + 4, /implies 1056540 bytes, the file has 1056544/],
    ['dim = 2^30', [2 ** 30, 172, 5, 8, 4, 512, 512], fileSize, /dim 1073741824 is above the limit 65536/],
    ['every field huge', [2 ** 30, 2 ** 31 - 1, 2 ** 31 - 1, 1, 1, 2 ** 31 - 1, 2 ** 31 - 1], fileSize, /above the limit/],
    ['2^31 - 1 layers', [64, 172, 2 ** 31 - 1, 8, 4, 512, 512], fileSize, /n_layers 2147483647 is above the limit 1024/],
    ['seq_len 2^31 - 1', [64, 172, 5, 8, 4, 512, 2 ** 31 - 1], fileSize, /seq_len 2147483647 is above the limit/],
    ['vocab -2^31', [64, 172, 5, 8, 4, -(2 ** 31), 512], fileSize, /vocab_size\| 2147483648 is above the limit/],
    ['dim = 2^16 with the other fields at their limits', [2 ** 16, 2 ** 20, 1024, 1, 1, 2 ** 24, 2 ** 20], fileSize, /implies \d+ bytes, the file has 1056540/],
    ['heads not dividing dim (dim 64, 6 heads)', [64, 172, 5, 6, 6, 512, 512], fileSize, /n_heads must divide dim, got dim 64 and n_heads 6/],
    ['all-zero header', [0, 0, 0, 0, 0, 0, 0], fileSize, /expected dim > 0, got 0/],
    ['negative layers', [64, 172, -5, 8, 4, 512, 512], fileSize, /expected n_layers > 0, got -5/],
    ['zero heads', [64, 172, 5, 0, 4, 512, 512], fileSize, /expected n_heads > 0, got 0/],
    ['zero vocab', [64, 172, 5, 8, 4, 0, 512], fileSize, /vocab_size\| > 0, got 0/],
    ['heads not dividing dim', [64, 172, 5, 7, 7, 512, 512], fileSize, /n_heads must divide dim, got dim 64 and n_heads 7/],
    ['kv heads not dividing heads', [64, 172, 5, 8, 3, 512, 512], fileSize, /n_kv_heads must divide n_heads, got n_heads 8 and n_kv_heads 3/],
    ['odd head size', [63, 172, 5, 7, 7, 512, 512], fileSize, /must be even/],
  ];
  for (const [what, h, size, msg] of bad) {
    it(`rejects ${what}`, () => {
      const e = (() => { try { parseLlama2cHeader(header(h), size); } catch (err) { return err; } })();
      expect(e).toBeInstanceOf(ModelFormatError);
      expect((e as Error).message).toMatch(msg);
    });
  }

  it('rejects file sizes that are not byte counts', () => {
    for (const size of [-1, 1.5, NaN, Infinity, 2 ** 60]) {
      expect(() => parseLlama2cHeader(header(stories260K), size)).toThrow(ModelFormatError);
    }
  });

  it('lays out the largest header it accepts from 28 bytes, without allocating for the claimed size', () => {
    // About 2^49 bytes claimed: only the tensor table (O(layers)) is built, never a buffer.
    const config: ModelConfig = {
      dim: 2 ** 16, hiddenDim: 2 ** 20, nLayers: 1024, nHeads: 2 ** 12, nKvHeads: 2 ** 12, vocabSize: 2 ** 24, seqLen: 2 ** 20,
      headSize: 16, sharedClassifier: false, normEps: 1e-5, ropeTheta: 10000, ropeStyle: 'interleaved',
    };
    const size = llama2cFileSize(config);
    expect(size).toBeGreaterThan(2 ** 48);
    expect(Number.isSafeInteger(size)).toBe(true);
    const { tensors } = parseLlama2cHeader(encodeLlama2cHeader(config), size);
    expect(tensors).toHaveLength(1 + 9 * 1024 + 1 + 1);
    const last = tensors[tensors.length - 1]!;
    expect(last.offset + last.byteLength).toBe(size);
    // One byte off either way is refused, overflow-free.
    expect(() => parseLlama2cHeader(encodeLlama2cHeader(config), size + 1)).toThrow(ModelFormatError);
    expect(() => parseLlama2cHeader(encodeLlama2cHeader(config), size - 1)).toThrow(ModelFormatError);
  });

  it('refuses a header whose size matches but whose counts would make the tensor table or KV cache huge', () => {
    const tiny = { dim: 2, hiddenDim: 1, nHeads: 1, nKvHeads: 1, vocabSize: 1, headSize: 2, sharedClassifier: true, normEps: 1e-5, ropeTheta: 10000, ropeStyle: 'interleaved' } as const;
    const manyLayers: ModelConfig = { ...tiny, nLayers: 50_000_000, seqLen: 1 };
    expect(() => parseLlama2cHeader(encodeLlama2cHeader(manyLayers), llama2cFileSize(manyLayers))).toThrow(/n_layers 50000000 is above the limit 1024/);
    const longContext: ModelConfig = { ...tiny, nLayers: 1, seqLen: 2 ** 30 };
    expect(() => parseLlama2cHeader(encodeLlama2cHeader(longContext), llama2cFileSize(longContext))).toThrow(/seq_len 1073741824 is above the limit/);
  });

  it('rejects a short header and a version-1 export', () => {
    expect(() => parseLlama2cHeader(new Uint8Array(27), 27)).toThrow(/needs 28 bytes, got 27/);
    expect(() => parseLlama2cHeader(header([0x616b3432, 1, 64, 172, 5, 8, 4]), 1000)).toThrow(/version 1\/2 export/);
  });
});

describe('loadLlama2c', () => {
  it('returns views into the one buffer', () => {
    const bytes = readArrayBuffer(modelPath);
    const { weights: w, config } = loadLlama2c(bytes);
    expect(w.tokenEmbeddingTable.buffer).toBe(bytes);
    expect(w.wcls).toBe(w.tokenEmbeddingTable);
    expect(w.wq.length).toBe(config.nLayers * 64 * 64);
    expect(w.wk.length).toBe(config.nLayers * 32 * 64);
    expect(w.w2.length).toBe(config.nLayers * 64 * 172);
    expect(w.rmsFinalWeight.length).toBe(64);
    expect(w.rmsFinalWeight.byteOffset + 256 + 2 * 512 * 4 * 4).toBe(bytes.byteLength);
  });

  it('fails on a file shorter than its header', () => {
    expect(() => loadLlama2c(new ArrayBuffer(10))).toThrow(ModelFormatError);
    expect(() => loadLlama2c(new ArrayBuffer(0))).toThrow(/needs 28 bytes, got 0/);
  });

  it('refuses stories260K.bin truncated, with bytes appended, all zeros or random bytes', () => {
    const whole = readArrayBuffer(modelPath);
    let x = 99;
    const random = new Uint8Array(fileSize).map(() => ((x = (x * 1103515245 + 12345) >>> 0) >>> 24));
    const cases: [string, ArrayBuffer, RegExp][] = [
      ['cut in the middle', whole.slice(0, 500_000), /implies 1056540 bytes, the file has 500000/],
      ['cut to the header', whole.slice(0, 28), /implies 1056540 bytes, the file has 28/],
      ['cut inside the header', whole.slice(0, 20), /needs 28 bytes, got 20/],
      ['four bytes appended', new Uint8Array([...new Uint8Array(whole), 0, 0, 0, 0]).buffer, /the file has 1056544/],
      ['all zeros', new ArrayBuffer(fileSize), /expected dim > 0, got 0/],
      ['random bytes', random.buffer, /llama2.c header/],
    ];
    for (const [what, bytes, msg] of cases) {
      const e = (() => { try { loadLlama2c(bytes); } catch (err) { return err; } })();
      expect(e, what).toBeInstanceOf(ModelFormatError);
      expect((e as ModelFormatError).code).toBe('MODEL_FORMAT');
      expect((e as ModelFormatError).remedy).toMatch(/checkpoint|llama2.c/);
      expect((e as Error).message, what).toMatch(msg);
    }
  });
});

describe('the checkpoint parsers under fuzzing', () => {
  /** Header fields: mostly small and plausible (so some headers pass), sometimes anything. */
  const field = fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: -2, max: 80 }) },
    { weight: 1, arbitrary: fc.constantFrom(0, 1, 2, 4, 8, 64, 172, 512, -512, 2 ** 16, 2 ** 20, 2 ** 24, 2 ** 30, 2 ** 31 - 1, -(2 ** 31)) },
    { weight: 1, arbitrary: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }) },
  );
  const headerValues = fc.array(field, { minLength: 7, maxLength: 7 });
  /** The size the header implies when it parses as a config, else a size near it or anything. */
  const impliedSize = (h: number[]): number | undefined => {
    const [dim, hidden, layers, heads, kv, vocab, seq] = h as [number, number, number, number, number, number, number];
    if ([dim, hidden, layers, heads, kv, seq].some((v) => v <= 0) || vocab === 0 || dim % heads || heads % kv) return undefined;
    const c: ModelConfig = {
      dim, hiddenDim: hidden, nLayers: layers, nHeads: heads, nKvHeads: kv, vocabSize: Math.abs(vocab), seqLen: seq,
      headSize: dim / heads, sharedClassifier: vocab > 0, normEps: 1e-5, ropeTheta: 10000, ropeStyle: 'interleaved',
    };
    return llama2cFileSize(c);
  };

  /** A parse may only give a layout that fits the file exactly, or a ModelFormatError. */
  const layoutOrRefusal = (run: () => { tensors: { offset: number; byteLength: number; aliasOf?: string }[] }, size: number): void => {
    let layout;
    try {
      layout = run();
    } catch (e) {
      if (!(e instanceof ModelFormatError)) throw e;
      return;
    }
    const own = layout.tensors.filter((t) => !t.aliasOf);
    for (const t of own) {
      expect(t.offset).toBeGreaterThanOrEqual(LLAMA2C_HEADER_BYTES);
      expect(t.offset + t.byteLength).toBeLessThanOrEqual(size);
    }
  };

  it('parseLlama2cHeader: any header with any size', () => {
    const size = (h: number[]) => {
      const implied = impliedSize(h);
      const near = implied === undefined ? fc.constant(0) : fc.integer({ min: -8, max: 8 }).map((d) => implied + d);
      return fc.oneof(near, fc.nat(), fc.constantFrom(-1, 0.5, NaN, Number.MAX_SAFE_INTEGER, 2 ** 60));
    };
    fc.assert(
      fc.property(headerValues.chain((h) => fc.tuple(fc.constant(h), size(h))), ([h, n]) => {
        layoutOrRefusal(() => parseLlama2cHeader(header(h), n), n);
      }),
      { numRuns: 2000, seed: 3 },
    );
  });

  it('loadLlama2c: random bytes, and fuzzed small headers over buffers of about their size', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), (b) => layoutOrRefusal(() => loadLlama2c(b.slice().buffer), b.byteLength)),
      { numRuns: 500, seed: 5 },
    );
    const small = fc.array(fc.integer({ min: -2, max: 12 }), { minLength: 7, maxLength: 7 });
    fc.assert(
      fc.property(small, fc.integer({ min: -12, max: 12 }), (h, delta) => {
        const n = Math.max(0, Math.min((impliedSize(h) ?? 64) + delta, 1 << 20));
        const bytes = new Uint8Array(n);
        bytes.set(header(h).subarray(0, Math.min(28, n)));
        layoutOrRefusal(() => loadLlama2c(bytes.buffer), n);
      }),
      { numRuns: 1000, seed: 9 },
    );
  });

  it('loadLlama2c: stories260K.bin with its header bytes changed', () => {
    const whole = new Uint8Array(readArrayBuffer(modelPath));
    fc.assert(
      fc.property(fc.array(fc.record({ at: fc.nat({ max: 27 }), value: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 4 }), (flips) => {
        const head = whole.slice(0, 28);
        for (const f of flips) head[f.at] = f.value;
        const copy = new Uint8Array(whole.byteLength);
        copy.set(whole);
        copy.set(head);
        layoutOrRefusal(() => loadLlama2c(copy.buffer), copy.byteLength);
      }),
      { numRuns: 200, seed: 21 },
    );
  });
});
