/**
 * Page-side tests of the Q4_0 kernels, exposed as `window.tp.q4.*`: the GPU against the f32
 * oracle (reference.ts) on the dequantised weights for weight-only runs, and for W4A8 (int8
 * activations) against runq.c's W8A8 arithmetic (reference-q8.ts) on the weights' exact Q8_0
 * form (q4ToQ8), on random inputs. Returns `worst` as in kernels.ts (≤ 1 passes).
 */
import * as ref from '../../src/model/reference.js';
import { dequantizeQ4, q4ToQ8, quantizeQ4 } from '../../src/model/reference-q4.js';
import { dequantizeQ8, matmulQ8, quantizeQ8 } from '../../src/model/reference-q8.js';
import type { Q8Activations } from '../../src/gpu/kernels/matmul-base.js';
import { createEmbedding } from '../../src/gpu/kernels/embed.js';
import { createQuantMatrix, destroyQuantMatrix, writeQuantRows } from '../../src/gpu/core/quant-matrix.js';
import { addBiasAccumulate, compare, effectiveInput, matmulCaseData, runMatmulCase, withCtx, type Check, type WeightMatmulCase } from './kernels.js';
import { randn, rng } from '../../src/cli/page/gpu.js';
import { siluMulRunq, testQuantEmbed } from './kernels-q8.js';

export interface Q4MatmulCase extends WeightMatmulCase {
  /** 'int8': W4A8 (default 'f32', weight-only). */
  activations?: Q8Activations;
  /**
   * Extreme values: every nibble 15 (even rows) or 0 (odd rows), and x of one sign per row of
   * magnitude 1 (plain input), so every int8 value is ±127: the largest integer sums there are.
   */
  extreme?: boolean;
}

export async function testQ4Matmul(c: Q4MatmulCase): Promise<Check & { chunks: number }> {
  return withCtx(c.bindingLimit, async (ctx) => {
    const { m, k, n } = c;
    const rand = rng(c.seed ?? 3);
    const a8 = c.activations === 'int8';
    const d = matmulCaseData(rand, m, k, n, c.input ?? 'plain', () => quantizeQ4(randn(n * k, rand, 0.3)));
    const input = d.input;
    const wq = d.w;
    if (c.extreme) {
      for (let i = 0; i < n; i++) wq.q.fill(i % 2 ? 0x00 : 0xff, (i * k) / 2, ((i + 1) * k) / 2);
      for (let r = 0; r < m; r++) d.xData.fill(r % 2 ? -1 : 1, r * d.xStride, (r + 1) * d.xStride);
    }
    const wd = dequantizeQ4(wq, n * k);
    // The effective input; W4A8 quantises it as runq.c computes it (its SwiGLU order).
    const xin = effectiveInput(d, m, k, a8 ? siluMulRunq : undefined);
    const want = new Float32Array(m * n);
    const mag = new Float32Array(m * n);
    if (!a8) {
      ref.matmul(want, xin, wd, m, k, n);
      // The kernel sums Σ nibble·x − 8·Σx per group: its rounding scales with the nibbles (0..15)
      // times the group's scale, not with |nibble − 8|.
      const wmag = wd.map((_, i) => 16 * Math.abs(wq.s[Math.floor(i / 32)]!));
      ref.matmul(mag, xin.map(Math.abs), wmag, m, k, n);
    } else {
      // Integer sums per group, then the oracle's f32 operations in its order (up to a
      // fused multiply-add). A fused input computed in another order may round one value per
      // group to the other side of a half: one int8 step per group is allowed there (as W8A8).
      const w8 = q4ToQ8(wq, n * k);
      for (let r = 0; r < m; r++) {
        const xq = quantizeQ8(xin.subarray(r * k, (r + 1) * k), k, 32);
        matmulQ8(want.subarray(r * n, (r + 1) * n), xq, w8, k, n, 32);
        const xd = dequantizeQ8(xq, k, 32);
        ref.matmul(mag.subarray(r * n, (r + 1) * n), xd.map(Math.abs), wd.map(Math.abs), 1, k, n);
        if (input === 'plain') continue;
        for (let i = 0; i < n; i++) {
          let s = 0;
          for (let j = 0; j < k; j += 32) {
            let wmax = 0;
            for (let t = j; t < j + 32; t++) wmax = Math.max(wmax, Math.abs(wd[i * k + t]!));
            s += wmax * xq.s[j / 32]!;
          }
          mag[r * n + i] = mag[r * n + i]! + s * 1e5;
        }
      }
    }
    addBiasAccumulate(d, want, mag, n, c);

    const w = createQuantMatrix(ctx, n, k, 32, 'wq4', 'q4_0');
    writeQuantRows(ctx, w, 0, wq.q, wq.s);
    const chunks = w.chunks.length;
    const got = await runMatmulCase(ctx, d, m, k, n, w, c).finally(() => destroyQuantMatrix(w));
    return { ...compare(got, want, mag), chunks };
  });
}

/** Embedding rows of a Q4_0 table: exactly (nibble − 8) · scale. */
export async function testQ4Embed(c: { vocab: number; dim: number; tokens: number[]; bindingLimit?: number; seed?: number }): Promise<Check & { chunks: number }> {
  return testQuantEmbed(c, 32, 'q4_0', (x) => {
    const tq = quantizeQ4(x);
    return { ...tq, dequantized: dequantizeQ4(tq, x.length) };
  }, createEmbedding);
}
