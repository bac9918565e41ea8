/** Seeded data and the error measure the CPU kernels' unit tests (src/cpu/*.test.ts) share. */
import { mulberry32 } from '../../src/model/mulberry32.js';
import * as ref from '../../src/model/reference.js';

/** n values uniform in [-scale, scale) from a seed. */
export function randoms(n: number, seed: number, scale = 1): Float32Array {
  const r = mulberry32(seed);
  return Float32Array.from({ length: n }, () => scale * (2 * r() - 1));
}

/**
 * The worst |got − want| / (rel·mag + abs) (≤ 1 passes), mag being the op's sum of magnitudes, as
 * the GPU kernel checks (test-support/page/kernels.ts `compare`) measure it.
 */
export function worst(got: ArrayLike<number>, want: ArrayLike<number>, mag: ArrayLike<number>, rel = 1e-5, abs = 1e-6): number {
  let w = 0;
  for (let i = 0; i < want.length; i++) {
    const e = Math.abs(got[i]! - want[i]!);
    w = Math.max(w, Number.isFinite(e) ? e / (rel * mag[i]! + abs) : Infinity);
  }
  return w;
}

/** The m rows of k values lying `stride` apart in `data`, packed. */
export function rowsOf(data: Float32Array, m: number, k: number, stride: number): Float32Array {
  return Float32Array.from({ length: m * k }, (_, i) => data[Math.floor(i / k) * stride + (i % k)]!);
}

/** The oracle's y = x·wᵀ for (m, k) x and (n, k) w, and the same over magnitudes: what `worst` measures against. */
export function matmulOracle(x: Float32Array, w: Float32Array, m: number, k: number, n: number): { want: Float32Array; mag: Float32Array } {
  const want = new Float32Array(m * n);
  const mag = new Float32Array(m * n);
  ref.matmul(want, x, w, m, k, n);
  ref.matmul(mag, x.map(Math.abs), w.map(Math.abs), m, k, n);
  return { want, mag };
}
