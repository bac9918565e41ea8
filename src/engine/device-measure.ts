/**
 * What `"auto"` needs to know about the kinds of rank: how fast each device runs the
 * calibration gemv (a GPU adapter in a device of its own, a CPU rank's WebAssembly kernels on
 * this thread, standing in for one core), and what of a request CPU ranks cannot run yet.
 */
import { isCpuSpec, type DeviceSpec } from '../gpu/core/adapter.js';
import type { TensorInfo } from '../model/config.js';
import type { RankOptions } from '../protocol.js';

/** The calibration matmul's shape: the same 1024×1024 gemv as src/gpu/calibrate.ts. */
const N = 1024;
const K = 1024;

/** Best-of-rounds ms per 1024×1024 f32 gemv on the CPU ranks' kernels, here on this thread. */
export async function measureCpuGemvMs(rounds = 6, reps = 8): Promise<number> {
  const { CpuKernels } = await import('../cpu/kernels.js');
  const kn = CpuKernels.create((N * K + N + K) * 4 + (1 << 16));
  const x = kn.alloc(K * 4);
  const w = kn.alloc(N * K * 4);
  const y = kn.alloc(N * 4);
  kn.f32(x, K).fill(0.5);
  kn.f32(w, N * K).fill(0.25);
  const gemv = () => kn.matmul({ y, x, w, dtype: 'f32', m: 1, k: K, n: N });
  gemv();
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) gemv();
    best = Math.min(best, (performance.now() - t0) / reps);
    // Yield between rounds, as the GPU measurement does while it waits for its queue.
    await new Promise((ok) => setTimeout(ok, 0));
  }
  return best;
}

/** ms per calibration gemv on each device: GPU specs in devices of their own, CPU specs on the kernels here. */
export async function calibrateDevices(specs: (DeviceSpec | undefined)[]): Promise<number[]> {
  const gpu = specs.filter((s) => !isCpuSpec(s));
  // Loaded on demand: it pulls in the GPU modules, which only a measured "auto" needs here.
  const gpuMs = gpu.length ? await (await import('../gpu/calibrate.js')).calibrateAdapters(gpu) : [];
  const cpuMs = specs.some(isCpuSpec) ? await measureCpuGemvMs() : 0;
  let g = 0;
  return specs.map((s) => (isCpuSpec(s) ? cpuMs : gpuMs[g++]!));
}

/**
 * What of this request CPU ranks cannot run yet, as a phrase (`quantised weights (q8_0 in groups
 * of 64)`, `runq.c's exact W8A8`), or undefined when they can run all of it. They run f32, f16,
 * Q8_0/Q4_0 in GGUF's groups of 32 (src/cpu/quant.ts) and q8_m (GGUF's Q4_1, Q5_x and K-quants:
 * src/cpu/kquant.ts), with f32 or int8 activations.
 */
export function cpuBlocker(tensors: readonly TensorInfo[], rank: Pick<RankOptions, 'activations' | 'runqExact'>): string | undefined {
  // runq.c's exact W8A8 runs on CPU ranks (workers/cpu-exact.ts): Q8_0 matrices, f32 norms.
  if (rank.runqExact && rank.activations === 'int8' && tensors.every((t) => t.dtype === 'f32' || t.dtype === 'q8_0')) return undefined;
  const quantised = [...new Set(tensors.filter((t) => t.quant && t.dtype !== 'q8_m' && t.quant.groupSize !== 32).map((t) => `${t.dtype} in groups of ${t.quant!.groupSize}`))];
  const why = [
    ...(quantised.length ? [`quantised weights (${quantised.join(', ')})`] : []),
    ...(rank.runqExact && rank.activations === 'int8' ? ["runq.c's exact W8A8"] : []),
  ];
  return why.length ? why.join(', ') : undefined;
}
