/**
 * Qwen3's per-head q/k RMSNorm on a CPU rank. A row's q heads lie back to back, as do its k
 * heads, so each group is `rmsnorm` (kernels.wat) over heads-as-rows of headSize with the one
 * shared weight: two kernel calls per row, in place.
 */
import type { CpuKernels } from './kernels.js';

export interface QkNormArgs {
  qkv: number; // (m, ·) rows of [q (nHeads·headSize) | k (nKv·headSize) | ...], rowStride floats apart
  rowStride: number;
  nHeads: number;
  nKv: number;
  headSize: number;
  /** (2·headSize,) f32: the q norm's weight, then the k norm's. */
  weight: number;
  eps: number;
  m: number;
}

export function qkNorm(kn: CpuKernels, a: QkNormArgs): void {
  const hs = a.headSize;
  for (let r = 0; r < a.m; r++) {
    const q = a.qkv + r * a.rowStride * 4;
    const k = q + a.nHeads * hs * 4;
    kn.rmsnorm(q, q, a.weight, a.nHeads, hs, a.eps);
    kn.rmsnorm(k, k, a.weight + hs * 4, a.nKv, hs, a.eps);
  }
}
