/**
 * Page-side tests of the f16 weight kernels, exposed as `window.tp.f16.*`: the GPU against the
 * f32 oracle (reference.ts) on the f16-rounded weights, on random inputs. Every half is exactly
 * an f32, so the tolerance is the f32 matmul's. Returns `worst` as in kernels.ts (≤ 1 passes),
 * and which variant ran (`packed` on an adapter without shader-f16).
 */
import * as ref from '../model/reference.js';
import { dequantize, quantize } from '../model/formats/gguf-blocks.js';
import { createStepParams, createStorageBuffer, destroyStepParams } from '../gpu/buffers.js';
import { createMatmul, type MatmulInput } from '../gpu/matmul.js';
import { createEmbedF16, createHalfMatrix, destroyHalfMatrix, f16KernelsOf, writeHalfRows } from '../gpu/f16.js';
import type { F16Kernels } from '../gpu/f16-kernels.js';
import { compare, randn, readFloats, rng, runOps, withCtx, type Check } from './kernels.js';

export interface F16MatmulCase {
  m: number;
  k: number;
  n: number;
  input?: 'plain' | 'rmsnorm' | 'siluMul';
  bias?: boolean;
  accumulate?: boolean;
  seed?: number;
  /** A fresh context whose storage bindings hold at most this many bytes (W split in row chunks). */
  bindingLimit?: number;
}

export interface F16Check extends Check {
  chunks: number;
  kernels: F16Kernels;
  shaderF16: boolean;
}

/** x as f16 bits and the f32 values they hold. */
function halves(x: Float32Array): { h: Uint16Array; f: Float32Array } {
  const bytes = quantize('F16', x);
  const f = new Float32Array(x.length);
  dequantize('F16', bytes, f);
  return { h: new Uint16Array(bytes.buffer), f };
}

export async function testF16Matmul(c: F16MatmulCase): Promise<F16Check> {
  return withCtx(c.bindingLimit, async (ctx) => {
    const { m, k, n } = c;
    const rand = rng(c.seed ?? 3);
    const input = c.input ?? 'plain';
    const xStride = input === 'siluMul' ? 2 * k : k;
    const xData = randn(m * xStride, rand);
    const w = halves(randn(n * k, rand, 0.3));
    const g = randn(k, rand);
    const bias = randn(n, rand);
    const y0 = randn(m * n, rand);

    const xin = new Float32Array(m * k);
    for (let r = 0; r < m; r++) {
      const row = xData.subarray(r * xStride, r * xStride + k);
      if (input === 'rmsnorm') ref.rmsnorm(xin.subarray(r * k, (r + 1) * k), row, g, 1, k, 1e-5);
      else if (input === 'siluMul') ref.siluMul(xin.subarray(r * k, (r + 1) * k), row, xData.subarray(r * xStride + k, r * xStride + 2 * k), k);
      else xin.set(row, r * k);
    }
    const want = new Float32Array(m * n);
    const mag = new Float32Array(m * n);
    ref.matmul(want, xin, w.f, m, k, n);
    ref.matmul(mag, xin.map(Math.abs), w.f.map(Math.abs), m, k, n);
    for (let i = 0; i < m * n; i++) {
      if (c.bias) {
        want[i] = Math.fround(want[i]! + bias[i % n]!);
        mag[i] = mag[i]! + Math.abs(bias[i % n]!);
      }
      if (c.accumulate) {
        want[i] = Math.fround(want[i]! + y0[i]!);
        mag[i] = mag[i]! + Math.abs(y0[i]!);
      }
    }

    const step = createStepParams(ctx, m);
    step.write(m, new Uint32Array(m));
    const x = createStorageBuffer(ctx, xData);
    const wm = createHalfMatrix(ctx, n, k, 'wf16');
    writeHalfRows(ctx, wm, 0, w.h);
    const y = createStorageBuffer(ctx, y0);
    const gb = createStorageBuffer(ctx, g);
    const bb = createStorageBuffer(ctx, bias);
    const inputOpt: MatmulInput =
      input === 'rmsnorm' ? { kind: 'rmsnorm', weight: gb, eps: 1e-5 }
        : input === 'siluMul' ? { kind: 'siluMul', b: x, bOffset: k, bStride: xStride }
          : { kind: 'plain' };
    const op = createMatmul(ctx, step, { x, xStride, w: wm, y, maxM: m, input: inputOpt, bias: c.bias ? bb : undefined, accumulate: c.accumulate });
    await runOps(ctx, [op], m);
    const got = await readFloats(ctx, y, m * n);
    const chunks = wm.chunks.length;
    op.destroy();
    destroyHalfMatrix(wm);
    for (const b of [x, y, gb, bb]) b.destroy();
    destroyStepParams(step);
    return { ...compare(got, want, mag), chunks, kernels: f16KernelsOf(ctx), shaderF16: ctx.features.shaderF16 };
  });
}

/** Embedding rows of an f16 table: exactly the halves' values. */
export async function testF16Embed(c: { vocab: number; dim: number; tokens: number[]; bindingLimit?: number; seed?: number }): Promise<F16Check> {
  return withCtx(c.bindingLimit, async (ctx) => {
    const rand = rng(c.seed ?? 5);
    const m = c.tokens.length;
    const t = halves(randn(c.vocab * c.dim, rand));
    const want = new Float32Array(m * c.dim);
    ref.embed(want, t.f, c.tokens, c.dim);
    const step = createStepParams(ctx, m);
    step.write(m, new Uint32Array(m));
    const table = createHalfMatrix(ctx, c.vocab, c.dim, 'embedding');
    writeHalfRows(ctx, table, 0, t.h);
    const tok = createStorageBuffer(ctx, Uint32Array.from(c.tokens));
    const yb = createStorageBuffer(ctx, m * c.dim * 4);
    const op = createEmbedF16(ctx, step, { table, tokens: tok, y: yb, maxM: m });
    await runOps(ctx, [op], m);
    const got = await readFloats(ctx, yb, m * c.dim);
    const chunks = table.chunks.length;
    op.destroy();
    destroyHalfMatrix(table);
    [tok, yb].forEach((b) => b.destroy());
    destroyStepParams(step);
    return { ...compare(got, want, 0, 0, 0), chunks, kernels: f16KernelsOf(ctx), shaderF16: ctx.features.shaderF16 };
  });
}
