/**
 * Picks kernel variants for this adapter by timing them once, at context creation: the best
 * matmul differs between CPU rasterizers (SwiftShader: register blocks, no workgroup memory or
 * barriers) and real GPUs (shared-memory tiles). Candidates run in interleaved rounds and the
 * fastest round counts, so a burst of load from other processes does not decide the choice.
 */
import { isCpuAdapter, openGpuContext, type GemmKind, type GemvKind, type GpuContext, type GpuContextOptions, type SmallGemmKind } from './core/device.js';
import { createMatrix, createStepParams, createStorageBuffer, destroyMatrix, destroyStepParams } from './core/buffers.js';
import type { BoundOp } from './core/op.js';
import { createMatmul } from './kernels/matmul.js';
import { availableGemm, availableGemv, availableSmall, SMALL_M } from './kernels/matmul-f32.js';

export interface TunedContextOptions extends GpuContextOptions {
  /** Pick kernel variants by measuring them now (default true, unless `choices` are given); else use heuristics. */
  tune?: boolean;
}

/** A context whose kernel choices were measured on its adapter (or handed in as `choices`). */
export async function createGpuContext(opts: TunedContextOptions = {}): Promise<GpuContext> {
  const ctx = await openGpuContext(opts);
  if (!opts.choices && (opts.tune ?? true)) await tuneGpuContext(ctx);
  return ctx;
}

/** Wall-clock ms per encode of `op`, `reps` encodes in one submit (after one warm-up submit). */
export async function timeOp(ctx: GpuContext, op: BoundOp, m: number, reps: number): Promise<number> {
  const enc = ctx.device.createCommandEncoder();
  const pass = enc.beginComputePass();
  for (let i = 0; i < reps; i++) op.encode(pass, m);
  pass.end();
  const t0 = performance.now();
  ctx.device.queue.submit([enc.finish()]);
  await ctx.device.queue.onSubmittedWorkDone();
  return (performance.now() - t0) / reps;
}

async function fastest<T extends string>(ctx: GpuContext, ops: [T, BoundOp][], m: number, reps: number, rounds: number, measured: Record<string, number>, prefix: string): Promise<T> {
  const best = new Map<T, number>();
  for (const [, op] of ops) await timeOp(ctx, op, m, 1);
  for (let r = 0; r < rounds; r++) {
    for (const [name, op] of ops) {
      const t = await timeOp(ctx, op, m, reps);
      best.set(name, Math.min(best.get(name) ?? Infinity, t));
    }
  }
  let choice = ops[0]![0];
  for (const [name] of ops) {
    measured[`${prefix}_${name}`] = best.get(name)!;
    if (best.get(name)! < best.get(choice)!) choice = name;
  }
  return choice;
}

/**
 * The variants worth timing (each costs a pipeline compile, slow on CPU adapters). On CPU
 * adapters the workgroup-memory ones ('tree', 'tiled') are left out: barriers are slow there, so
 * they never win (still selectable explicitly).
 */
export function tuneCandidates(ctx: GpuContext): { gemv: GemvKind[]; gemm: GemmKind[]; small: SmallGemmKind[] } {
  const skip = new Set<string>(isCpuAdapter(ctx.adapterInfo) ? ['tree', 'tiled'] : []);
  const gemv = availableGemv(ctx).filter((v) => !skip.has(v));
  const gemm = availableGemm(ctx).filter((v) => !skip.has(v));
  return { gemv: gemv.length ? gemv : availableGemv(ctx), gemm: gemm.length ? gemm : availableGemm(ctx), small: availableSmall(ctx) };
}

export async function tuneGpuContext(ctx: GpuContext): Promise<void> {
  const M = 32;
  const K = 512;
  const N = 512;
  const step = createStepParams(ctx, M);
  step.write(M, new Uint32Array(M));
  const x = createStorageBuffer(ctx, M * K * 4, 'tune x');
  const y = createStorageBuffer(ctx, M * N * 4, 'tune y');
  const w = createMatrix(ctx, N, K, 'tune w');
  // A decode batch, its input normalized on the fly as most of a model's matmuls' are, on a
  // classifier-like matrix (many rows, short K: where the candidates differ most).
  const smallStep = createStepParams(ctx, SMALL_M);
  smallStep.write(SMALL_M, new Uint32Array(SMALL_M));
  const g = createStorageBuffer(ctx, new Float32Array(K).fill(1), 'tune norm');
  const ws = createMatrix(ctx, 8 * N, K / 2, 'tune small w');
  const ys = createStorageBuffer(ctx, SMALL_M * 8 * N * 4, 'tune small y');
  const ops: BoundOp[] = [];
  try {
    const measured: Record<string, number> = {};
    const cand = tuneCandidates(ctx);
    const gemm = cand.gemm.map((v) => [v, createMatmul(ctx, step, { x, w, y, maxM: M, gemm: v })] as [typeof v, BoundOp]);
    const gemv = cand.gemv.map((v) => [v, createMatmul(ctx, step, { x, w, y, maxM: 1, gemv: v })] as [typeof v, BoundOp]);
    ops.push(...gemm.map((g) => g[1]), ...gemv.map((g) => g[1]));
    ctx.choices.gemm = await fastest(ctx, gemm, M, 1, 2, measured, 'gemm');
    ctx.choices.gemv = await fastest(ctx, gemv, 1, 4, 2, measured, 'gemv');
    if (cand.small.length > 1) {
      const input = { kind: 'rmsnorm', weight: g, eps: 1e-5 } as const;
      const small = cand.small.map((v) => [v, createMatmul(ctx, smallStep, { x, w: ws, y: ys, maxM: SMALL_M, small: v, input })] as [typeof v, BoundOp]);
      ops.push(...small.map((s) => s[1]));
      ctx.choices.small = await fastest(ctx, small, SMALL_M, 2, 3, measured, 'small');
    }
    ctx.choices.measured = measured;
  } finally {
    for (const op of ops) op.destroy();
    destroyMatrix(w);
    destroyMatrix(ws);
    x.destroy();
    y.destroy();
    g.destroy();
    ys.destroy();
    destroyStepParams(step);
    destroyStepParams(smallStep);
  }
}
