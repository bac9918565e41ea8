/**
 * GPU helpers shared by the page's kernel benchmarks and the kernel tests of the test page: the
 * page's one tuned context, seeded random data, a submit of bound ops, GPU timestamps, and the
 * GPU self-test worker.
 */
import type { GpuContext } from '../../gpu/core/device.js';
import { createGpuContext } from '../../gpu/tune.js';
import { createStepParams, type StepParams } from '../../gpu/core/buffers.js';
import type { BoundOp } from '../../gpu/core/op.js';
import type { SelfTestReply, SelfTestRequest } from '../../gpu/selftest.worker.js';
import { mulberry32 } from '../../model/mulberry32.js';

let shared: Promise<GpuContext> | undefined;

/** One context for the page (tuned once); tests that need their own make it themselves. */
export function context(): Promise<GpuContext> {
  shared ??= createGpuContext();
  return shared;
}

/** The pages' seeded PRNG. */
export const rng = mulberry32;

export function randn(n: number, rand: () => number, scale = 1): Float32Array<ArrayBuffer> {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = (rand() * 2 - 1) * scale;
  return a;
}

export async function runOps(ctx: GpuContext, ops: BoundOp[], m: number): Promise<void> {
  const enc = ctx.device.createCommandEncoder();
  const pass = enc.beginComputePass();
  for (const op of ops) op.encode(pass, m);
  pass.end();
  ctx.device.queue.submit([enc.finish()]);
}

export function stepFor(ctx: GpuContext, m: number, positions: ArrayLike<number>, slots?: ArrayLike<number>): StepParams {
  const step = createStepParams(ctx, m);
  step.write(m, positions, slots);
  return step;
}

/** GPU ms of each of `reps` passes (timestamp queries), each pass encoding `op` once. */
export async function gpuTimes(ctx: GpuContext, encode: (pass: GPUComputePassEncoder) => void, reps: number): Promise<number[]> {
  const qs = ctx.device.createQuerySet({ type: 'timestamp', count: 2 * reps });
  const res = ctx.device.createBuffer({ size: 16 * reps, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const rd = ctx.device.createBuffer({ size: 16 * reps, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
  const enc = ctx.device.createCommandEncoder();
  for (let i = 0; i < reps; i++) {
    const pass = enc.beginComputePass({ timestampWrites: { querySet: qs, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 } });
    encode(pass);
    pass.end();
  }
  enc.resolveQuerySet(qs, 0, 2 * reps, res, 0);
  enc.copyBufferToBuffer(res, 0, rd, 0, 16 * reps);
  ctx.device.queue.submit([enc.finish()]);
  await rd.mapAsync(GPUMapMode.READ);
  const t = new BigUint64Array(rd.getMappedRange().slice(0));
  rd.destroy();
  res.destroy();
  qs.destroy();
  const out: number[] = [];
  for (let i = 0; i < reps; i++) out.push(Number(t[2 * i + 1]! - t[2 * i]!) / 1e6);
  return out;
}

/** A seeded 3×65 by 65×17 matmul and `reads` timed readbacks, run in a dedicated worker. */
export async function matmulInWorker(reads: number): Promise<{ req: SelfTestRequest; reply: SelfTestReply }> {
  const m = 3;
  const k = 65;
  const n = 17;
  const rand = rng(21);
  const req = { m, k, n, x: randn(m * k, rand), w: randn(n * k, rand), reads };
  return { req, reply: await runWorker(req) };
}

function runWorker(req: SelfTestRequest): Promise<SelfTestReply> {
  const worker = new Worker(new URL('../../gpu/selftest.worker.ts', import.meta.url), { type: 'module' });
  return new Promise<SelfTestReply>((resolve) => {
    worker.onmessage = (e: MessageEvent<SelfTestReply>) => resolve(e.data);
    worker.onerror = (e) => resolve({ error: e.message || 'worker error' });
    worker.postMessage(req);
  }).finally(() => worker.terminate());
}
