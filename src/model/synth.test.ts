import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadLlama2c, llama2cFileSize } from './formats/llama2c.js';
import { argmax, generate } from './reference.js';
import { llama2cConfig, SYNTH_SHAPES, synthTensorFiller, synthTokenizerBytes, writeSynthCheckpoint } from './synth.js';
import { Tokenizer } from './tokenizer/tokenizer.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-synth-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tiny = llama2cConfig({ dim: 16, hiddenDim: 40, nLayers: 2, nHeads: 4, nKvHeads: 2, vocabSize: 400, seqLen: 32 });
const read = (p: string) => { const b = readFileSync(p); return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer; };

describe('writeSynthCheckpoint', () => {
  it('writes a file that parses back with the same config', async () => {
    const path = join(dir, 'tiny.bin');
    await writeSynthCheckpoint(tiny, 7, path);
    expect(statSync(path).size).toBe(llama2cFileSize(tiny));
    const m = loadLlama2c(read(path));
    expect(m.config).toEqual(tiny);
    expect(Array.from(m.weights.rmsAttWeight).every((x) => x === 1)).toBe(true);
    expect(Array.from(m.weights.rmsFinalWeight).every((x) => x === 1)).toBe(true);
    const bound = 1 / Math.sqrt(16);
    expect(m.weights.wq.every((x) => Math.abs(x) <= bound && x !== 0)).toBe(true);
    expect(m.weights.w2.every((x) => Math.abs(x) <= 1 / Math.sqrt(40))).toBe(true);
    // each tensor can be regenerated alone from its name and the seed
    const wk1 = new Float32Array(8 * 16);
    synthTensorFiller('layers.1.attention.wk', 16, 7)(wk1);
    expect(m.weights.wk.subarray(8 * 16)).toEqual(wk1);
    // the oracle runs on it and stays finite
    const out = generate(m, [1], 20, (l) => argmax(l, tiny.vocabSize));
    expect(out.length).toBeGreaterThan(1);
  });

  it('is deterministic in the seed', async () => {
    await writeSynthCheckpoint(tiny, 7, join(dir, 'a.bin'));
    await writeSynthCheckpoint(tiny, 7, join(dir, 'b.bin'));
    await writeSynthCheckpoint(tiny, 8, join(dir, 'c.bin'));
    const a = readFileSync(join(dir, 'a.bin'));
    expect(readFileSync(join(dir, 'b.bin')).equals(a)).toBe(true);
    expect(readFileSync(join(dir, 'c.bin')).equals(a)).toBe(false);
  });

  it('writes an unshared classifier after the RoPE tables', async () => {
    const c = { ...tiny, sharedClassifier: false };
    const path = join(dir, 'unshared.bin');
    await writeSynthCheckpoint(c, 3, path);
    const m = loadLlama2c(read(path));
    expect(m.config.sharedClassifier).toBe(false);
    expect(m.weights.wcls).not.toEqual(m.weights.tokenEmbeddingTable);
  });

  it('knows the real shapes', () => {
    // sizes of Karpathy's stories15M.bin and stories110M.bin
    expect(llama2cFileSize(llama2cConfig(SYNTH_SHAPES.stories15M))).toBe(60_816_028);
    expect(llama2cFileSize(llama2cConfig(SYNTH_SHAPES.stories110M))).toBe(438_381_596);
    // and of stories260K.bin, the test model itself
    expect(llama2cFileSize(llama2cConfig(SYNTH_SHAPES.stories260K))).toBe(1_056_540);
  });
});

describe('synthTokenizerBytes', () => {
  it('is a valid llama2.c tokenizer that encodes and decodes', () => {
    const bytes = synthTokenizerBytes(32000, 1);
    const tok = Tokenizer.parse(bytes, 32000);
    expect(new TextDecoder().decode(tok.pieces[3])).toBe('<0x00>');
    expect(new TextDecoder().decode(tok.pieces[258])).toBe('<0xFF>');
    expect(tok.pieceId(' ')).toBeGreaterThan(258);
    expect(new Set(tok.pieces.map((p) => new TextDecoder().decode(p))).size).toBe(32000);
    for (const text of ['Once upon a time, there was a tiny model.', 'naïve 😀']) {
      const ids = tok.encode(text);
      expect(ids.length).toBeLessThanOrEqual(new TextEncoder().encode(text).length + 2);
      expect(tok.decodeText(ids.slice(1), ids[0])).toBe(text);
    }
    // merges happen: fewer tokens than characters
    expect(tok.encode('the cat sat on the mat and then it ran').length).toBeLessThan(30);
    expect(synthTokenizerBytes(32000, 1)).toEqual(bytes);
    expect(() => synthTokenizerBytes(100, 1)).toThrow(/at least 354 tokens, got 100/);
  });
});
