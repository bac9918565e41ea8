/**
 * What a shard worker computes on, chosen once at init: a WebGPU device (`gpuCompute`) or the
 * WebAssembly SIMD kernels (`cpuCompute`, a CPU rank). Each binds its backend, weights and
 * state behind one `RankCompute`, so the worker's step path runs the same forward with no
 * per-step test of which kind it is.
 */
import type { ShardInit, ShardInitResult, StepInput } from '../src/protocol.js';
import type { Communicator } from '../src/collective/index.js';
import type { RankPrecision } from '../src/engine/types.js';
import { destroyGpuContext } from '../src/gpu/core/device.js';
import { createGpuContext } from '../src/gpu/tune.js';
import { adapterName, CPU_ADAPTER_NAME } from '../src/gpu/core/adapter.js';
import type { KernelProfiler } from '../src/gpu/core/profiler.js';
import { cacheAccess } from '../src/gpu/kernels/kv-cache.js';
import { resolveKvCache } from '../src/gpu/kernels/kv-format.js';
import type { Backend, RankState, StepTimes } from './backend.js';
import { forward } from './forward.js';
import type { RowSum } from './row-sum.js';
import { createGpuBackend } from './gpu-backend.js';
import { createCpuBackend } from './cpu-backend.js';
import { relaxedSimdAvailable } from '../src/cpu/kernels.js';
import { rankPrecision } from './precision.js';

/** A rank's device with its loaded shard: what the shard worker steps and reports. */
export interface RankCompute {
  info: ShardInitResult;
  /** The adapter's name in `stats()`. */
  adapter: string;
  /** Settles with the reason the device was lost; a CPU rank's never settles. */
  lost: Promise<string>;
  /** Builds the weights and the step's state from the packed shard; resolves with the ms the weights took. */
  load(o: ShardInit, packed: ArrayBuffer, rowSum: RowSum, warnings: string[]): Promise<number>;
  /** One step's forward, with the row sum chosen at load; this rank's logits rows go into `into`. */
  forward(comm: Communicator, input: StepInput, into: Float32Array, times: StepTimes): Promise<void>;
  workBytes(): number;
  precision(): RankPrecision;
  profiler(): KernelProfiler | undefined;
  /** Test hook: loses the device. */
  destroyDevice(): void;
  dispose(): void;
}

/** The options' activations and exactness, as both kinds of rank read them. */
function stateMode(o: ShardInit): { activations: 'int8' | 'f32'; exact: boolean } {
  const activations = o.activations ?? 'f32';
  // runq.c's arithmetic: exact attention, and at world > 1 the ranks' sums chained in its order.
  return { activations, exact: !!o.runqExact && activations === 'int8' };
}

/** Whether this rank runs runq.c's exact arithmetic (the row sum is chosen by it). */
export function runsExact(o: ShardInit): boolean {
  return stateMode(o).exact;
}

/** A WebGPU rank: its own device (kernels tuned unless `o.choices` came with the init). */
export async function gpuCompute(o: ShardInit): Promise<RankCompute> {
  const t0 = performance.now();
  const ctx = await createGpuContext({ device: o.device, label: `rank${o.rank}`, choices: o.choices, tune: !o.choices });
  const b = createGpuBackend(ctx);
  let weights: ReturnType<typeof b.createWeights> | undefined;
  let state: ReturnType<typeof b.createState> | undefined;
  let sum: RowSum | undefined;
  const a = ctx.adapterInfo;
  return {
    info: {
      adapter: adapterName(a),
      kernels: `gemv=${ctx.choices.gemv} gemm=${ctx.choices.gemm} small=${ctx.choices.small}`,
      initMs: performance.now() - t0,
      choices: { gemm: ctx.choices.gemm, gemv: ctx.choices.gemv, small: ctx.choices.small },
    },
    adapter: a.description || a.architecture,
    lost: ctx.lost.then((info) => info.message || info.reason || 'unknown'),
    async load(o, packed, rowSum, warnings) {
      sum = rowSum;
      const t0 = performance.now();
      weights = b.createWeights(o.config, o.plan, packed);
      const uploadMs = performance.now() - t0;
      const { activations, exact } = stateMode(o);
      state = b.createState(o.config, o.plan, weights, {
        maxM: o.maxRows, maxLogitRows: o.maxLogitRows, contextLength: o.contextLength, slots: o.slots, rows: rowSum.binding, activations, exact,
        kvCache: resolveKvCache(o.kvCache ?? 'auto', ctx.device.features.has('shader-f16'), exact), profile: !!o.profile,
      });
      if (o.profile && !state.profiler) warnings.push('profile: the adapter has no timestamp-query feature, so kernels are not timed');
      await ctx.device.queue.onSubmittedWorkDone();
      return uploadMs;
    },
    forward: (comm, input, into, times) => forward(b, state!, sum!, comm, input, into, times),
    workBytes: () => state?.workBytes ?? 0,
    precision: () => ({
      ...rankPrecision(ctx, weights),
      kvCache: state?.kv.dtype ?? 'f32',
      kvCacheKernels: state ? cacheAccess(ctx, state.kv) : 'f32',
    }),
    profiler: () => state?.profiler,
    destroyDevice: () => ctx.device.destroy(),
    dispose() {
      if (state) b.destroyState(state);
      if (weights) b.destroyWeights(weights);
      state = weights = undefined;
      destroyGpuContext(ctx);
    },
  };
}

/** What differs between the backends a CPU rank can run: its kernels' name and what it reports. */
export interface CpuRankKind<W, S> {
  kernels: string;
  /** Bytes of the state (activations, tables, KV cache). */
  workBytes(s: S): number;
  precision(w: W | undefined, s: S | undefined): RankPrecision;
}

/**
 * A CPU rank over backend `b`: no adapter and no tuning, the weights and state in the rank's own
 * WebAssembly memory. What the backend cannot run fails at load with its typed error.
 */
export function cpuRankCompute<W, S extends RankState<Op>, Op>(o: ShardInit, b: Backend<W, S, Op>, kind: CpuRankKind<W, S>): RankCompute {
  let weights: W | undefined;
  let state: S | undefined;
  let sum: RowSum | undefined;
  return {
    // The kernel choices are a GPU rank's; handed back unchanged so the group's bookkeeping stays one shape.
    info: { adapter: CPU_ADAPTER_NAME, kernels: kind.kernels, initMs: 0, choices: o.choices ?? { gemm: 'regblock', gemv: 'tree' } },
    adapter: CPU_ADAPTER_NAME,
    lost: new Promise<string>(() => {}),
    async load(o, packed, rowSum) {
      sum = rowSum;
      const t0 = performance.now();
      weights = b.createWeights(o.config, o.plan, packed);
      const uploadMs = performance.now() - t0;
      const { activations, exact } = stateMode(o);
      state = b.createState(o.config, o.plan, weights, {
        maxM: o.maxRows, maxLogitRows: o.maxLogitRows, contextLength: o.contextLength, slots: o.slots, rows: rowSum.binding, activations, exact,
        kvCache: resolveKvCache(o.kvCache ?? 'auto', false, exact), profile: false,
      });
      return uploadMs;
    },
    forward: (comm, input, into, times) => forward(b, state!, sum!, comm, input, into, times),
    workBytes: () => (state ? kind.workBytes(state) : 0),
    precision: () => kind.precision(weights, state),
    profiler: () => undefined,
    destroyDevice: () => {},
    dispose() {
      if (state) b.destroyState(state);
      state = weights = undefined;
    },
  };
}

/** A CPU rank on the WebAssembly SIMD kernels (`cpu-backend.ts`). */
export function cpuCompute(o: ShardInit): RankCompute {
  return cpuRankCompute(o, createCpuBackend(), {
    kernels: relaxedSimdAvailable() ? 'wasm-relaxed-simd' : 'wasm-simd',
    // The state is everything allocated after its mark: activations, tables and the KV cache.
    workBytes: (s) => s.kernels.mark() - s.mark,
    // f16 weights and cache values are widened to f32 as they are loaded.
    precision: (w, s) => {
      const dtypes = new Set(w ? [w.tokEmbeddings, w.output, ...w.layers.flatMap((l) => [l.wqkv, l.wo, l.w13, l.w2])].map((m) => m.dtype) : ['f32' as const]);
      const kv = s?.kvCache ?? 'f32';
      return { weights: dtypes.size === 1 ? [...dtypes][0]! : 'mixed', math: 'f32', f16Kernels: 'packed', kvCache: kv, kvCacheKernels: kv === 'f16' ? 'packed' : 'f32' };
    },
  });
}
