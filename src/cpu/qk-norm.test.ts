import { describe, expect, it } from 'vitest';
import { setFlagsFromString } from 'node:v8';
import { CpuKernels, relaxedSimdAvailable, type CpuKernelVariant } from './kernels.js';
import { qkNorm } from './qk-norm.js';
import * as ref from '../model/reference.js';
import { mulberry32 } from '../model/mulberry32.js';

setFlagsFromString('--experimental-wasm-relaxed-simd');
const variants: CpuKernelVariant[] = relaxedSimdAvailable() ? ['simd', 'relaxed'] : ['simd'];

describe('CPU q/k norm (Qwen3)', () => {
  // Odd head sizes (heads start off 16-byte boundaries), GQA, and rows with v and slack after k.
  it.each(variants.flatMap((v) => [[v, 1, 3, 1, 13, 0], [v, 4, 5, 2, 7, 3], [v, 3, 4, 2, 24, 1], [v, 2, 2, 2, 1, 0]] as const))(
    '%s: m %i, %i q heads, %i k heads of %i (row slack %i): the oracle per head, v untouched', (variant, m, nHeads, nKv, hs, slack) => {
      const rand = mulberry32(m * 31 + hs);
      const stride = (nHeads + 2 * nKv) * hs + slack;
      const x = Float32Array.from({ length: m * stride }, () => (2 * rand() - 1) * 3);
      const w = Float32Array.from({ length: 2 * hs }, () => 0.3 + 1.7 * rand());
      const want = x.slice();
      ref.headNorm(want, m, stride, nHeads, hs, w.subarray(0, hs), 1e-6);
      ref.headNorm(want.subarray(nHeads * hs), m, stride, nKv, hs, w.subarray(hs), 1e-6);
      const kn = CpuKernels.create(undefined, { variant });
      const at = kn.alloc(x.byteLength);
      const wt = kn.alloc(w.byteLength);
      kn.f32(at, x.length).set(x);
      kn.f32(wt, w.length).set(w);
      qkNorm(kn, { qkv: at, rowStride: stride, nHeads, nKv, headSize: hs, weight: wt, eps: 1e-6, m });
      const got = kn.f32(at, x.length);
      for (let r = 0; r < m; r++) {
        for (let i = 0; i < stride; i++) {
          const j = r * stride + i;
          // Each output is g·s·x, s from a sum of squares (no cancellation): |want| bounds its error.
          if (i < (nHeads + nKv) * hs) expect(Math.abs(got[j]! - want[j]!), `row ${r} value ${i}`).toBeLessThanOrEqual(1e-6 * Math.abs(want[j]!) + 1e-7);
          else expect(got[j], `row ${r} value ${i} (v or slack)`).toBe(x[j]);
        }
      }
      // a head really was normalised: mean square of (output / weight) is 1
      const head = Array.from(got.subarray(0, hs), (v, i) => v / w[i]!);
      expect(head.reduce((s, v) => s + v * v, 0) / hs).toBeCloseTo(1, 4);
    });
});
