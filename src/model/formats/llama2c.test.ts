import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelFormatError } from '../../errors.js';
import { modelsDir, readArrayBuffer } from '../fixtures/paths.js';
import { encodeLlama2cHeader, LLAMA2C_HEADER_BYTES, loadLlama2c, parseLlama2cHeader } from './llama2c.js';

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
    ['dim = 2^30', [2 ** 30, 172, 5, 8, 4, 512, 512], fileSize, /implies \d+ .*the file has 1056540/],
    ['every field huge', [2 ** 30, 2 ** 31 - 1, 2 ** 31 - 1, 1, 1, 2 ** 31 - 1, 2 ** 31 - 1], fileSize, /impossibly large/],
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
  });
});
