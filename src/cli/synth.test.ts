import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { loadLlama2c, parseLlama2cHeader } from '../model/formats/llama2c.js';
import { loadGgufDequantized } from '../model/formats/gguf.js';
import { readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { ggufTokenizer } from '../model/tokenizer/gguf-tokenizer.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import { synthCommand } from './synth.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-synth-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('synthCommand', () => {
  it('writes stories15M and its tokenizer', async () => {
    const { model, tokenizer } = await synthCommand({ shape: 'stories15M', seed: 1, out: join(dir, 'models') });
    const head = readFileSync(model!).subarray(0, 28);
    const { config } = parseLlama2cHeader(head, statSync(model!).size);
    expect(config).toMatchObject({ dim: 288, hiddenDim: 768, nLayers: 6, nHeads: 6, nKvHeads: 6, vocabSize: 32000, seqLen: 256 });
    expect(Tokenizer.parse(readFileSync(tokenizer!), 32000).vocabSize).toBe(32000);
  });

  it('--format gguf writes the same weights and tokenizer as GGUF, one file per quant', async () => {
    const out = join(dir, 'models');
    const { gguf } = await synthCommand({ shape: 'stories15M', seed: 1, out, format: 'gguf', quant: ['f32', 'q4_0'] });
    const bin = loadLlama2c(readArrayBuffer(join(out, 'stories15M-synth.bin')));
    const f32 = await loadGgufDequantized(readFileSync(gguf!.f32!));
    expect(f32.layout.config).toEqual({ ...bin.config, normEps: Math.fround(1e-5) });
    // bytewise: toEqual walks millions of elements one by one
    const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
    expect(bytes(f32.model.weights.w2).equals(bytes(bin.weights.w2))).toBe(true);
    expect(bytes(f32.model.weights.tokenEmbeddingTable).equals(bytes(bin.weights.tokenEmbeddingTable))).toBe(true);
    const q4 = await loadGgufDequantized(readFileSync(gguf!.q4_0!));
    expect(q4.layout.tensors.find((t) => t.name === 'layers.3.feed_forward.w1')!.dtype).toBe('q4_0');
    // 4-bit: within a step (amax/8) of the f32 value: the extreme opposite a block's maximum clamps to 7 steps
    const w = bin.weights.wq.subarray(0, 288 * 32);
    const d = q4.model.weights.wq.subarray(0, 288 * 32);
    for (let b = 0; b < w.length / 32; b++) {
      const amax = Math.max(...w.subarray(b * 32, b * 32 + 32).map(Math.abs));
      for (let i = b * 32; i < b * 32 + 32; i++) expect(Math.abs(d[i]! - w[i]!)).toBeLessThanOrEqual(amax / 8 + 1e-3 * amax);
    }
    const tok = ggufTokenizer(q4.layout.metadata, 32000);
    const bins = Tokenizer.parse(readFileSync(join(out, 'tok32000-synth.bin')), 32000);
    expect(tok.encode('the quick brown fox', true, false)).toEqual(bins.encode('the quick brown fox', true, false));
  });

  it('--quant q4_k_m writes llama-quantize\'s mix, with its fallbacks where 256 does not divide a row', async () => {
    const out = join(dir, 'models');
    const { gguf } = await synthCommand({ shape: 'stories260K', seed: 1, out, format: 'gguf', quant: ['q4_k_m', 'f32'] });
    const km = await loadGgufDequantized(readFileSync(gguf!.q4_k_m!));
    const f32 = await loadGgufDequantized(readFileSync(gguf!.f32!));
    expect(km.layout.metadata['general.file_type']).toBe(15);
    // rows of 64 and 172: Q4_K falls back to Q5_0, the tied embedding's Q6_K to Q8_0, rows of 172 to F16
    const dtype = (n: string) => km.layout.tensors.find((t) => t.name === n)!.dtype;
    expect(['tok_embeddings', 'layers.0.attention.wq', 'layers.0.feed_forward.w2', 'layers.0.attention_norm'].map(dtype)).toEqual(['q8_0', 'q8_m', 'f16', 'f32']);
    const w = f32.model.weights.wq;
    const d = km.model.weights.wq;
    // 5-bit codes over each block's [-amax, amax]: within amax/16
    for (let b = 0; b < w.length / 32; b++) {
      const amax = Math.max(...w.subarray(b * 32, b * 32 + 32).map(Math.abs));
      for (let i = b * 32; i < b * 32 + 32; i++) expect(Math.abs(d[i]! - w[i]!)).toBeLessThanOrEqual(amax / 16 + 1e-3 * amax);
    }
  });

  it('rejects unknown shapes and bad seeds', async () => {
    await expect(synthCommand({ shape: 'stories1B' as 'stories15M', seed: 1, out: dir })).rejects.toThrow(InvalidArgumentError);
    await expect(synthCommand({ shape: 'stories15M', seed: 0.5, out: dir })).rejects.toThrow(/--seed must be an integer/);
    await expect(synthCommand({ shape: 'stories15M', seed: 1, out: dir, format: 'gguf', quant: ['q4_k'] })).rejects.toThrow(/takes f32, f16, q8_0, q4_0, q4_k_m, q5_k_m, q6_k \(got q4_k\)/);
    await expect(synthCommand({ shape: 'stories15M', seed: 1, out: dir, format: 'onnx' })).rejects.toThrow(InvalidArgumentError);
  });
});
