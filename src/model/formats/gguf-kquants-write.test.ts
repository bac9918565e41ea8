import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../config.js';
import { SYNTH_SHAPES, llama2cConfig } from '../synth.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';
import { modelsDir } from '../../../test-support/fixtures/paths.js';
import { mulberry32 } from '../mulberry32.js';
import type { ReferenceModel } from '../reference.js';
import { dequantize, GGML_TYPE_ID, type GgmlType } from './gguf-blocks.js';
import { quantizeAffine, quantizeAny } from './gguf-kquants-write.js';
import { useMoreBits } from './gguf-mix.js';
import { encodeGguf, ggufTensorPlan, referenceTensor } from './gguf-write.js';
import { ggufName, loadGgufDequantized, readGgufHeader } from './gguf.js';

/** 16 super-blocks of awkward values: uniform at six scales, zero, constant, one-signed, sparse, half-zero sub-blocks, outliers. */
function goldenInput(): Float32Array {
  let s = 2024;
  const rnd = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 8) / 16777216;
  const x = new Float32Array(16 * 256);
  for (let b = 0; b < 16; b++) {
    for (let i = 0; i < 256; i++) {
      const u = rnd() - 0.5;
      x[b * 256 + i] = [
        u * 2, u * 2e-3, u * 80, u, u * 0.1, u * 7,
        0, 0.25, u + 1, u - 1, i % 61 === 7 ? u * 9 : 0, (i >> 5) % 2 ? u : 0,
      ][b] ?? (rnd() + rnd() + rnd() - 1.5 + u) * 0.02 * (i % 97 === 0 ? 40 : 1);
    }
  }
  return x;
}

/**
 * SHA-256 of ggml's own `quantize_row_<type>_ref` output on goldenInput(): ggml-quants.c (ggml
 * d99724f) built with gcc -O2 -ffp-contract=off on x86-64, fed these floats' bytes.
 */
const GGML_REF_SHA256: Readonly<Partial<Record<GgmlType, string>>> = {
  Q4_0: 'fc4933f7bf920d1463aa7aaad97b57cc9953efe9a30c10393975e5e4cca6a113',
  Q8_0: '3e7ca22010f2ab3adb2885a60a41523141b8eabab499a1bbb1543177b9d3f4d6',
  Q4_1: '6714bd5eab07a2e129960a2cebc3e2971428c85c2117e22f770547ba6ba7e845',
  Q5_0: 'e37d3dc134e677868fe21bee36e6cd0f53746d842214e6b9bf64919897637bef',
  Q5_1: 'd2178b32367f4df3b341130dbaad02c1a1b46cd87daa5396267b3f7c87406bd2',
  Q4_K: '6c2d9bf601ebce8c3d9fbfc7486bd5f017ea437849702b299bd1d0e51599cfb0',
  Q5_K: 'afdbf7100326be7770a49c68b39a9d28cef9d4c63a3fca351d7802d9c004dd83',
  Q6_K: '9dc6c63cece81e8908bae247fc8a61bc2091e34d7a3984370001644f791a49b6',
};

const typeName = (id: number) => (Object.keys(GGML_TYPE_ID) as GgmlType[]).find((t) => GGML_TYPE_ID[t] === id);

describe('the GGUF writer\'s quantiser and llama-quantize\'s K-quant mixes', () => {
  it('writes the bytes ggml\'s reference quantisation writes, for every type', () => {
    const x = goldenInput();
    for (const [type, sha] of Object.entries(GGML_REF_SHA256) as [GgmlType, string][]) {
      expect(createHash('sha256').update(quantizeAny(type, x)).digest('hex'), type).toBe(sha);
    }
    expect(() => quantizeAffine('Q4_K', new Float32Array(300))).toThrow(/whole blocks of 256/);
  });

  it('picks use_more_bits\' layers: the first and last eighth and every third between', () => {
    const picked = (n: number) => Array.from({ length: n }, (_, i) => i).filter((i) => useMoreBits(i, n));
    expect(picked(12)).toEqual([0, 3, 6, 9, 10, 11]);
    expect(picked(8)).toEqual([0, 3, 6, 7]);
    expect(picked(6)).toEqual([2, 5]);
  });

  it('types each tensor as llama-quantize does, falling back where 256 does not divide a row', () => {
    const types = (c: ModelConfig, q: 'q4_k_m' | 'q5_k_m' | 'q6_k') => Object.fromEntries(ggufTensorPlan(c, q).map((t) => [t.name, t.type]));
    // stories110M: rows of 768 and 2048, a tied embedding
    const big = types(llama2cConfig(SYNTH_SHAPES.stories110M), 'q4_k_m');
    expect([big.tok_embeddings, big.norm, big['layers.0.attention_norm']]).toEqual(['Q6_K', 'F32', 'F32']);
    expect(['wq', 'wk', 'wv', 'wo'].map((k) => big[`layers.1.attention.${k}`])).toEqual(['Q4_K', 'Q4_K', 'Q4_K', 'Q4_K']);
    expect(['wq', 'wk', 'wv', 'wo'].map((k) => big[`layers.3.attention.${k}`])).toEqual(['Q4_K', 'Q4_K', 'Q6_K', 'Q4_K']);
    expect(['w1', 'w2', 'w3'].map((k) => big[`layers.11.feed_forward.${k}`])).toEqual(['Q4_K', 'Q6_K', 'Q4_K']);
    expect(Array.from({ length: 12 }, (_, l) => big[`layers.${l}.feed_forward.w2`]).filter((t) => t === 'Q6_K')).toHaveLength(6);
    const q5 = types(llama2cConfig(SYNTH_SHAPES.stories110M), 'q5_k_m');
    expect([q5['layers.0.attention.wv'], q5['layers.1.attention.wv'], q5['layers.1.feed_forward.w1'], q5.tok_embeddings]).toEqual(['Q6_K', 'Q5_K', 'Q5_K', 'Q6_K']);
    expect(new Set(Object.values(types(llama2cConfig(SYNTH_SHAPES.stories110M), 'q6_k')))).toEqual(new Set(['Q6_K', 'F32']));
    // stories15M: rows of 288 take Q5_0 for Q4_K, Q8_0 for Q6_K (the embedding, picked attn_v); ffn_down's rows of 768 stay K-quants
    const small = types(llama2cConfig(SYNTH_SHAPES.stories15M), 'q4_k_m');
    expect([small.tok_embeddings, small['layers.2.attention.wv'], small['layers.1.attention.wv'], small['layers.1.attention.wq']]).toEqual(['Q8_0', 'Q8_0', 'Q5_0', 'Q5_0']);
    expect([small['layers.2.feed_forward.w2'], small['layers.1.feed_forward.w2']]).toEqual(['Q6_K', 'Q4_K']);
    expect(types(llama2cConfig(SYNTH_SHAPES.stories15M), 'q5_k_m')['layers.0.attention.wq']).toBe('Q5_1');
    // stories260K: rows of 172 split into no block: F16
    expect(types(llama2cConfig(SYNTH_SHAPES.stories260K), 'q4_k_m')['layers.0.feed_forward.w2']).toBe('F16');
  });

  it('round-trips a Q4_K_M file through the GGUF reader: each tensor in its type, holding the quantiser\'s values', async () => {
    const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
    // 8 layers, so that use_more_bits picks 4 of them; rows of 256
    const config: ModelConfig = {
      dim: 256, hiddenDim: 256, nLayers: 8, nHeads: 4, nKvHeads: 2, vocabSize: 512, seqLen: 32, headSize: 64,
      sharedClassifier: true, normEps: 1e-5, ropeTheta: 10000, ropeStyle: 'interleaved',
    };
    const rand = mulberry32(3);
    const uniform = (n: number) => Float32Array.from({ length: n }, () => (2 * rand() - 1) / 16);
    const ones = (n: number) => new Float32Array(n).fill(1);
    const [L, d, kv] = [config.nLayers, config.dim, config.nKvHeads * config.headSize];
    const emb = uniform(config.vocabSize * d);
    const model: ReferenceModel = {
      config,
      weights: {
        tokenEmbeddingTable: emb, wcls: emb, rmsAttWeight: ones(L * d), rmsFfnWeight: ones(L * d), rmsFinalWeight: ones(d),
        wq: uniform(L * d * d), wk: uniform(L * kv * d), wv: uniform(L * kv * d), wo: uniform(L * d * d),
        w1: uniform(L * d * d), w2: uniform(L * d * d), w3: uniform(L * d * d),
      },
    };
    const bytes = encodeGguf(model, 'q4_k_m', tok);
    const h = await readGgufHeader({ name: 'm.gguf', size: async () => bytes.byteLength, head: async (n) => bytes.subarray(0, n) });
    expect(h.metadata['general.file_type']).toBe(15);
    const plan = ggufTensorPlan(config, 'q4_k_m');
    expect(Object.fromEntries(h.tensors.map((t) => [t.name, typeName(t.type)]))).toEqual(Object.fromEntries(plan.map((t) => [ggufName(t.name), t.type])));
    expect(plan.filter((t) => t.type === 'Q6_K').map((t) => t.name)).toEqual(
      ['tok_embeddings', ...[0, 3, 6, 7].flatMap((l) => [`layers.${l}.attention.wv`, `layers.${l}.feed_forward.w2`])],
    );
    // an untied embedding keeps the base type beside a Q6_K output
    const untied = ggufTensorPlan({ ...config, sharedClassifier: false }, 'q4_k_m');
    expect(['tok_embeddings', 'output'].map((n) => untied.find((t) => t.name === n)?.type)).toEqual(['Q4_K', 'Q6_K']);
    const { model: read } = await loadGgufDequantized(bytes);
    for (const name of ['tok_embeddings', 'layers.1.attention.wq', 'layers.3.attention.wv', 'layers.7.feed_forward.w2', 'layers.2.ffn_norm', 'norm']) {
      const type = plan.find((t) => t.name === name)!.type;
      const x = referenceTensor(model, name);
      const want = new Float32Array(x.length);
      dequantize(type, quantizeAny(type, x), want);
      const got = referenceTensor(read, name);
      expect(got.findIndex((v, i) => v !== want[i]), name).toBe(-1);
      // and near the weights: within a step of the 4-bit (6-bit) grid over the tensor's range
      let lo = Infinity;
      let hi = -Infinity;
      let worst = 0;
      x.forEach((v, i) => {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
        worst = Math.max(worst, Math.abs(v - got[i]!));
      });
      expect(worst, name).toBeLessThanOrEqual(type === 'F32' ? 0 : (hi - lo) / (type === 'Q6_K' ? 63 : 15));
    }
  });
});
