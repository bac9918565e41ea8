/**
 * A short speed measurement of devices, for splitting work between unequal ones: the
 * memory-bound m = 1 matmul that dominates a decode step, on a 4 MiB matrix. The devices are
 * measured in interleaved rounds and each one's best round counts, so a burst of load from
 * another process (or a first-use cost) does not decide the split.
 */
import { openGpuContext, destroyGpuContext, type GpuContext } from './core/device.js';
import type { DeviceSpec } from './core/adapter.js';
import { createMatrix, createStepParams, createStorageBuffer, destroyMatrix, destroyStepParams } from './core/buffers.js';
import { createMatmul } from './kernels/matmul.js';
import { timeOp } from './tune.js';

const N = 1024;
const K = 1024;

/** ms per 1024×1024 gemv on each device (lower is faster). */
export async function measureMatmulMs(ctxs: readonly GpuContext[], rounds = 6, reps = 8): Promise<number[]> {
  const setups = ctxs.map((ctx) => {
    const step = createStepParams(ctx, 1);
    step.write(1, [0]);
    const x = createStorageBuffer(ctx, K * 4, 'calibrate x');
    const y = createStorageBuffer(ctx, N * 4, 'calibrate y');
    const w = createMatrix(ctx, N, K, 'calibrate w');
    const op = createMatmul(ctx, step, { x, w, y, maxM: 1 });
    return { ctx, step, x, y, w, op };
  });
  try {
    for (const s of setups) await timeOp(s.ctx, s.op, 1, 1);
    const best = setups.map(() => Infinity);
    for (let r = 0; r < rounds; r++) {
      for (const [i, s] of setups.entries()) best[i] = Math.min(best[i]!, await timeOp(s.ctx, s.op, 1, reps));
    }
    return best;
  } finally {
    for (const s of setups) {
      s.op.destroy();
      destroyMatrix(s.w);
      s.x.destroy();
      s.y.destroy();
      destroyStepParams(s.step);
    }
  }
}

/** Measures adapters on this thread, each in a device of its own that is freed at once. */
export async function calibrateAdapters(specs: (DeviceSpec | undefined)[]): Promise<number[]> {
  const ctxs: GpuContext[] = [];
  try {
    for (const spec of specs) ctxs.push(await openGpuContext({ device: spec, label: 'calibrate' }));
    return await measureMatmulMs(ctxs);
  } finally {
    for (const c of ctxs) destroyGpuContext(c);
  }
}
