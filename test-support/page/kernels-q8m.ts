/**
 * Page-side tests of the q8_m kernels (GGUF's Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K kept as byte
 * codes and (scale, min) pairs), exposed as `window.tp.q8m.*`: the GPU against the f32 oracle
 * (reference.ts) on the weights as ggml dequantises them (gguf-kquants.ts), on random inputs
 * written by the test quantiser. Returns `worst` as in kernels.ts (≤ 1 passes).
 */
import * as ref from '../../src/model/reference.js';
import { AFFINE_GROUP, dequantizeAffine, splitAffineBlocks, type AffineType } from '../../src/model/formats/gguf-kquants.js';
import { createEmbedding } from '../../src/gpu/kernels/embed.js';
import { createQuantMatrix, destroyQuantMatrix, writeQuantRows } from '../../src/gpu/core/quant-matrix.js';
import { addBiasAccumulate, compare, effectiveInput, matmulCaseData, runMatmulCase, withCtx, type Check, type WeightMatmulCase } from './kernels.js';
import { randn, rng } from '../../src/cli/page/gpu.js';
import { testQuantEmbed } from './kernels-q8.js';
import { quantizeAny } from '../../src/model/formats/gguf-kquants-write.js';

/** `k` is whole blocks: a multiple of 256 for the K-quants, of 32 for the rest. */
export interface Q8mMatmulCase extends WeightMatmulCase {
  type: AffineType;
}

/** `x` stored as `type`, its kernels' form and its values as ggml dequantises them. */
function encode(type: AffineType, x: Float32Array): { q: Uint8Array; s: Float32Array; dequantized: Float32Array } {
  const blocks = quantizeAny(type, x);
  const q = new Uint8Array(x.length);
  const s = new Float32Array((x.length / AFFINE_GROUP[type]) * 2);
  splitAffineBlocks(type, blocks, q, s);
  const dequantized = new Float32Array(x.length);
  dequantizeAffine(type, blocks, dequantized);
  return { q, s, dequantized };
}

export async function testQ8mMatmul(c: Q8mMatmulCase): Promise<Check & { chunks: number }> {
  return withCtx(c.bindingLimit, async (ctx) => {
    const { m, k, n } = c;
    const G = AFFINE_GROUP[c.type];
    const d = matmulCaseData(rng(c.seed ?? 3), m, k, n, c.input ?? 'plain', () => encode(c.type, randn(n * k, rng((c.seed ?? 3) + 1), 0.3)));
    const xin = effectiveInput(d, m, k);
    const want = new Float32Array(m * n);
    ref.matmul(want, xin, d.w.dequantized, m, k, n);
    // The kernel's rounding scales with code · scale and the min, not with the value they make.
    const wmag = Float32Array.from(d.w.q, (code, i) => Math.abs(code * d.w.s[2 * Math.floor(i / G)]!) + Math.abs(d.w.s[2 * Math.floor(i / G) + 1]!));
    const mag = new Float32Array(m * n);
    ref.matmul(mag, xin.map(Math.abs), wmag, m, k, n);
    addBiasAccumulate(d, want, mag, n, c);
    const w = createQuantMatrix(ctx, n, k, G, `w_${c.type}`, 'q8_m');
    writeQuantRows(ctx, w, 0, d.w.q, d.w.s);
    const chunks = w.chunks.length;
    const got = await runMatmulCase(ctx, d, m, k, n, w, c).finally(() => destroyQuantMatrix(w));
    return { ...compare(got, want, mag), chunks };
  });
}

/** Embedding rows of a q8_m table: exactly the values ggml dequantises. */
export async function testQ8mEmbed(c: { type: AffineType; vocab: number; dim: number; tokens: number[]; bindingLimit?: number; seed?: number }): Promise<Check & { chunks: number }> {
  return testQuantEmbed(c, AFFINE_GROUP[c.type], 'q8_m', (x) => encode(c.type, x), createEmbedding);
}
