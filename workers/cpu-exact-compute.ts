/**
 * A CPU rank that runs `runqExact` (W8A8, runq.c's floats bit for bit) on the exact backend
 * (`cpu-exact.ts`), behind the same `RankCompute` as the other kinds of rank.
 */
import type { ShardInit } from '../src/protocol.js';
import { CPU_ADAPTER_NAME } from '../src/gpu/core/adapter.js';
import { resolveKvCache } from '../src/gpu/kernels/kv-format.js';
import { forward } from './forward.js';
import type { RowSum } from './row-sum.js';
import type { RankCompute } from './rank-compute.js';
import { createExactBackend } from './cpu-exact.js';

export function cpuExactCompute(o: ShardInit): RankCompute {
  const b = createExactBackend();
  let weights: ReturnType<typeof b.createWeights> | undefined;
  let state: ReturnType<typeof b.createState> | undefined;
  let sum: RowSum | undefined;
  return {
    info: { adapter: CPU_ADAPTER_NAME, kernels: 'wasm-simd-w8a8-exact', initMs: 0, choices: o.choices ?? { gemm: 'regblock', gemv: 'tree' } },
    adapter: CPU_ADAPTER_NAME,
    lost: new Promise<string>(() => {}),
    async load(o, packed, rowSum) {
      sum = rowSum;
      const t0 = performance.now();
      weights = b.createWeights(o.config, o.plan, packed);
      const uploadMs = performance.now() - t0;
      state = b.createState(o.config, o.plan, weights, {
        maxM: o.maxRows, maxLogitRows: o.maxLogitRows, contextLength: o.contextLength, slots: o.slots, rows: rowSum.binding,
        activations: 'int8', exact: true, kvCache: resolveKvCache(o.kvCache ?? 'auto', false, true), profile: false,
      });
      return uploadMs;
    },
    forward: (comm, input, into, times) => forward(b, state!, sum!, comm, input, into, times),
    // The activations live in the kernels' memory after the state's mark; the KV cache is (slots, layers, seq, kv) floats twice.
    workBytes: () => (state ? state.kernels.mark() - state.mark + state.cacheBytes : 0),
    precision: () => ({ weights: 'q8_0', math: 'f32', f16Kernels: 'packed', kvCache: 'f32', kvCacheKernels: 'f32' }),
    profiler: () => undefined,
    destroyDevice: () => {},
    dispose() {
      if (state) b.destroyState(state);
      state = weights = undefined;
    },
  };
}
