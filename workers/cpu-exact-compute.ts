/**
 * A CPU rank that runs `runqExact` (W8A8, runq.c's floats bit for bit) on the exact backend
 * (`cpu-exact.ts`), behind the same `RankCompute` as the other kinds of rank.
 */
import type { ShardInit } from '../src/protocol.js';
import { cpuRankCompute, type RankCompute } from './rank-compute.js';
import { createExactBackend } from './cpu-exact.js';

export function cpuExactCompute(o: ShardInit): RankCompute {
  return cpuRankCompute(o, createExactBackend(), {
    kernels: 'wasm-simd-w8a8-exact',
    // The activations live in the kernels' memory after the state's mark; the KV cache is (slots, layers, seq, kv) floats twice.
    workBytes: (s) => s.kernels.mark() - s.mark + s.cacheBytes,
    precision: () => ({ weights: 'q8_0', math: 'f32', f16Kernels: 'packed', kvCache: 'f32', kvCacheKernels: 'f32' }),
  });
}
