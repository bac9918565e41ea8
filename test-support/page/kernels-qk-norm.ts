/**
 * Page-side test of Qwen3's q/k norm kernel (src/gpu/kernels/qk-norm.ts), as `window.tp.qkNorm.*`:
 * the GPU against the oracle's `headNorm` on random rows. Returns `worst` as in kernels.ts (≤ 1 passes).
 */
import * as ref from '../../src/model/reference.js';
import { createStorageBuffer } from '../../src/gpu/core/buffers.js';
import { createQkNorm } from '../../src/gpu/kernels/qk-norm.js';
import { randn, rng, runOps, stepFor } from '../../src/cli/page/gpu.js';
import { compare, readFloats, withCtx, type Check } from './kernels.js';

export interface QkNormCase {
  m: number;
  nHeads: number;
  nKv: number;
  headSize: number;
  /** Floats of each row after q and k (v heads, padding): left as they are. */
  slack: number;
  /** Where q starts in a row (k follows it). */
  qOffset?: number;
  seed?: number;
}

export async function testQkNorm(c: QkNormCase): Promise<Check & { untouched: boolean }> {
  return withCtx(undefined, async (ctx) => {
    const { m, nHeads, nKv, headSize: hs } = c;
    const qOff = c.qOffset ?? 0;
    const stride = qOff + (nHeads + nKv) * hs + c.slack;
    const rand = rng(c.seed ?? 11);
    const x = randn(m * stride, rand, 3);
    const w = Float32Array.from({ length: 2 * hs }, () => 0.3 + 1.7 * rand());
    const want = x.slice();
    ref.headNorm(want.subarray(qOff), m, stride, nHeads, hs, w.subarray(0, hs), 1e-6);
    ref.headNorm(want.subarray(qOff + nHeads * hs), m, stride, nKv, hs, w.subarray(hs), 1e-6);
    const step = stepFor(ctx, m, new Uint32Array(m));
    const [xb, wb] = [createStorageBuffer(ctx, x), createStorageBuffer(ctx, w)];
    const op = createQkNorm(ctx, step, { qkv: xb, rowStride: stride, nHeads, nKv, headSize: hs, qOffset: qOff, weight: wb, eps: 1e-6, maxM: m });
    await runOps(ctx, [op], m);
    const got = await readFloats(ctx, xb, m * stride);
    op.destroy();
    [xb, wb, step.buffer].forEach((b) => b.destroy());
    // Outside the q and k heads every value stays bit for bit.
    let untouched = true;
    for (let r = 0; r < m; r++) {
      for (let i = 0; i < stride; i++) {
        const inHeads = i >= qOff && i < qOff + (nHeads + nKv) * hs;
        if (!inHeads && !Object.is(got[r * stride + i], x[r * stride + i])) untouched = false;
      }
    }
    // Each output is g·s·x with s from a sum of squares (no cancellation): |want| is its magnitude.
    return { ...compare(got, want, want.map(Math.abs), 2e-6, 1e-7), untouched };
  });
}
