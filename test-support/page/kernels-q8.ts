/**
 * Page-side tests of the Q8_0 kernels, exposed as `window.tp.q8.*`: the GPU against the CPU
 * oracles (reference.ts on the dequantised weights for weight-only runs, reference-q8.ts's
 * runq.c arithmetic for W8A8), on random inputs. Returns `worst` as in kernels.ts (≤ 1 passes).
 */
import * as ref from '../../src/model/reference.js';
import { dequantizeQ8, matmulQ8, quantizeQ8, type Q8Tensor } from '../../src/model/reference-q8.js';
import { createStepParams, createStorageBuffer, destroyStepParams } from '../../src/gpu/core/buffers.js';
import { createMatmul } from '../../src/gpu/kernels/matmul.js';
import type { MatmulInput, Q8Activations } from '../../src/gpu/kernels/matmul-base.js';
import { createEmbedding } from '../../src/gpu/kernels/embed.js';
import { createQuantMatrix, destroyQuantMatrix, writeQuantRows, type QuantMatrix } from '../../src/gpu/core/quant-matrix.js';
import { addBiasAccumulate, compare, effectiveInput, matmulCaseData, readFloats, runEmbedCase, runMatmulCase, withCtx, type Check } from './kernels.js';
import { randn, rng, runOps } from '../../src/cli/page/gpu.js';

export interface Q8MatmulCase {
  m: number;
  k: number;
  n: number;
  groupSize: number;
  activations: Q8Activations;
  input?: 'plain' | 'rmsnorm' | 'siluMul';
  bias?: boolean;
  accumulate?: boolean;
  seed?: number;
  /** A fresh context whose storage bindings hold at most this many bytes (W split in row chunks). */
  bindingLimit?: number;
}

/** runq.c's SwiGLU: val *= 1/(1+expf(-val)); val *= b. */
export function siluMulRunq(a: number, b: number): number {
  const f = Math.fround;
  return f(f(a * f(1 / f(1 + f(Math.exp(-a))))) * b);
}

export async function testQ8Matmul(c: Q8MatmulCase): Promise<Check & { chunks: number }> {
  return withCtx(c.bindingLimit, async (ctx) => {
    const { m, k, n, groupSize: gs } = c;
    const rand = rng(c.seed ?? 3);
    const d = matmulCaseData(rand, m, k, n, c.input ?? 'plain', () => quantizeQ8(randn(n * k, rand, 0.3), n * k, gs));
    const input = d.input;
    const wq = d.w;
    const wd = dequantizeQ8(wq, n * k, gs);
    // The effective input as runq.c computes it (weight-only uses the same f32 values).
    const xin = effectiveInput(d, m, k, siluMulRunq);
    const want = new Float32Array(m * n);
    const mag = new Float32Array(m * n);
    const slack = new Float32Array(m * n);
    if (c.activations === 'f32') {
      ref.matmul(want, xin, wd, m, k, n);
      ref.matmul(mag, xin.map(Math.abs), wd.map(Math.abs), m, k, n);
    } else {
      for (let r = 0; r < m; r++) {
        const xq: Q8Tensor = quantizeQ8(xin.subarray(r * k, (r + 1) * k), k, gs);
        matmulQ8(want.subarray(r * n, (r + 1) * n), xq, wq, k, n, gs);
        const xd = dequantizeQ8(xq, k, gs);
        ref.matmul(mag.subarray(r * n, (r + 1) * n), xd.map(Math.abs), wd.map(Math.abs), 1, k, n);
        // A fused input computed in another order may round one value per group to the other
        // side of a half (plain input is bit-exact): allow one int8 step per group there.
        if (input !== 'plain') {
          for (let i = 0; i < n; i++) {
            let s = 0;
            for (let j = 0; j < k; j += gs) {
              let wmax = 0;
              for (let t = j; t < j + gs; t++) wmax = Math.max(wmax, Math.abs(wd[i * k + t]!));
              s += wmax * xq.s[j / gs]!;
            }
            slack[r * n + i] = s;
          }
        }
      }
    }
    addBiasAccumulate(d, want, mag, n, c);
    for (let i = 0; i < m * n; i++) mag[i] = mag[i]! + slack[i]! * 1e5;

    const w = createQuantMatrix(ctx, n, k, gs, 'wq8');
    writeQuantRows(ctx, w, 0, wq.q, wq.s);
    const chunks = w.chunks.length;
    const got = await runMatmulCase(ctx, d, m, k, n, w, c).finally(() => destroyQuantMatrix(w));
    return { ...compare(got, want, mag), chunks };
  });
}

/** Embedding rows of a Q8_0 table: exactly q · scale (runq.c dequantises the table the same way). */
export async function testQ8Embed(c: { vocab: number; dim: number; groupSize: number; tokens: number[]; bindingLimit?: number; seed?: number }): Promise<Check & { chunks: number }> {
  return testQuantEmbed(c, c.groupSize, 'q8_0', (x) => {
    const tq = quantizeQ8(x, x.length, c.groupSize);
    return { ...tq, dequantized: dequantizeQ8(tq, x.length, c.groupSize) };
  }, createEmbedding);
}

/**
 * An embedding kernel of a quantised table against the oracle's rows of the dequantised table,
 * which it must give exactly. `quantize` makes the table's values and scales from random
 * weights, and their dequantised form.
 */
export async function testQuantEmbed(
  c: { vocab: number; dim: number; tokens: number[]; bindingLimit?: number; seed?: number },
  groupSize: number, kind: QuantMatrix['kind'],
  quantize: (x: Float32Array) => { q: Int8Array | Uint8Array; s: Float32Array; dequantized: Float32Array },
  createEmbed: typeof createEmbedding,
): Promise<Check & { chunks: number }> {
  return withCtx(c.bindingLimit, async (ctx) => {
    const rand = rng(c.seed ?? 5);
    const m = c.tokens.length;
    const tq = quantize(randn(c.vocab * c.dim, rand));
    const want = new Float32Array(m * c.dim);
    ref.embed(want, tq.dequantized, c.tokens, c.dim);
    const t = createQuantMatrix(ctx, c.vocab, c.dim, groupSize, 'embedding', kind);
    writeQuantRows(ctx, t, 0, tq.q, tq.s);
    const chunks = t.chunks.length;
    const got = await runEmbedCase(ctx, c.tokens, c.dim, (step, tokens, y) => createEmbed(ctx, step, { table: t, tokens, y, maxM: m }))
      .finally(() => destroyQuantMatrix(t));
    return { ...compare(got, want, 0, 0, 0), chunks };
  });
}

export interface Q8ChainCase {
  m: number;
  k: number;
  n: number;
  groupSize: number;
  /** Column boundaries of the parts (whole groups), as ranks split a row-parallel matmul: [0, …, k]. */
  split: number[];
  /** A fused input (rmsnorm needs the whole row: unsplit only). */
  input?: 'plain' | 'rmsnorm' | 'siluMul';
  seed?: number;
}

/**
 * A W8A8 matmul split by columns into parts, each part's matmul continuing the sum the previous
 * one left in y (`continueSum`, the exact row-parallel mode), must equal runq.c's one sequential
 * sum over all the groups bit for bit, fused inputs included (their divisions, sqrt and exp are
 * correctly rounded like C's). Each part quantises its own columns, as a rank does.
 */
export async function testQ8Chain(c: Q8ChainCase): Promise<Check> {
  return withCtx(undefined, async (ctx) => {
    const { m, k, n, groupSize: gs, split } = c;
    const input = c.input ?? 'plain';
    if (input === 'rmsnorm' && split.length !== 2) throw new Error('testQ8Chain: rmsnorm input needs the whole row');
    const rand = rng(c.seed ?? 7);
    const xStride = input === 'siluMul' ? 2 * k : k;
    const xData = randn(m * xStride, rand, input === 'siluMul' ? 4 : 1);
    const wq = quantizeQ8(randn(n * k, rand, 0.3), n * k, gs);
    const g = randn(k, rand);
    const want = new Float32Array(m * n);
    const xin = new Float32Array(k);
    for (let r = 0; r < m; r++) {
      const row = xData.subarray(r * xStride, r * xStride + k);
      if (input === 'rmsnorm') ref.rmsnorm(xin, row, g, 1, k, 1e-5);
      else if (input === 'siluMul') for (let i = 0; i < k; i++) xin[i] = siluMulRunq(row[i]!, xData[r * xStride + k + i]!);
      else xin.set(row);
      matmulQ8(want.subarray(r * n, (r + 1) * n), quantizeQ8(xin, k, gs), wq, k, n, gs);
    }

    const step = createStepParams(ctx, m);
    step.write(m, new Uint32Array(m));
    const x = createStorageBuffer(ctx, xData);
    const gb = createStorageBuffer(ctx, g);
    const y = createStorageBuffer(ctx, m * n * 4);
    const parts = split.slice(0, -1).map((k0, i) => {
      const kp = split[i + 1]! - k0;
      const q = new Int8Array(n * kp);
      const s = new Float32Array((n * kp) / gs);
      for (let row = 0; row < n; row++) {
        q.set(wq.q.subarray(row * k + k0, row * k + k0 + kp), row * kp);
        s.set(wq.s.subarray((row * k + k0) / gs, (row * k + k0 + kp) / gs), (row * kp) / gs);
      }
      const w = createQuantMatrix(ctx, n, kp, gs, `part${i}`);
      writeQuantRows(ctx, w, 0, q, s);
      const inputOpt: MatmulInput =
        input === 'rmsnorm' ? { kind: 'rmsnorm', weight: gb, eps: 1e-5 }
          : input === 'siluMul' ? { kind: 'siluMul', b: x, bOffset: k + k0, bStride: xStride }
            : { kind: 'plain' };
      const op = createMatmul(ctx, step, { x, xStride, xOffset: k0, w, y, maxM: m, activations: 'int8', input: inputOpt, continueSum: i > 0 });
      return { w, op };
    });
    await runOps(ctx, parts.map((p) => p.op), m);
    const got = await readFloats(ctx, y, m * n);
    for (const p of parts) {
      p.op.destroy();
      destroyQuantMatrix(p.w);
    }
    for (const b of [x, gb, y]) b.destroy();
    destroyStepParams(step);
    return compare(got, want, 0, 0, 0);
  });
}
