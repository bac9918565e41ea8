/**
 * A dedicated worker that does what a shard worker does with this module: create a context,
 * run a matmul, read it back through the readback helper. The kernel tests check it against
 * the oracle in the page; the benchmark uses it to time readbacks where the engine runs them.
 */
import { openGpuContext, destroyGpuContext } from './core/device.js';
import { createMatrix, createStepParams, createStorageBuffer } from './core/buffers.js';
import { createMatmul } from './kernels/matmul.js';
import { createReadback, createSleeper } from './core/readback.js';

export interface SelfTestRequest {
  m: number;
  k: number;
  n: number;
  x: Float32Array;
  w: Float32Array;
  /** Timed readbacks after a tiny dispatch. */
  reads: number;
}

export interface SelfTestReply {
  y?: Float32Array;
  readbackMs?: number[];
  /** Measured lengths of 0.15 ms sleeps of the readback helper's sleeper here. */
  sleepMs?: number[];
  pokes?: number;
  error?: string;
}

async function run(req: SelfTestRequest): Promise<SelfTestReply> {
  const ctx = await openGpuContext();
  try {
    const step = createStepParams(ctx, req.m);
    step.write(req.m, new Uint32Array(req.m));
    const x = createStorageBuffer(ctx, req.x);
    const y = createStorageBuffer(ctx, req.m * req.n * 4);
    const w = createMatrix(ctx, req.n, req.k, 'w', req.w);
    const op = createMatmul(ctx, step, { x, w, y, maxM: req.m });
    const rb = createReadback(ctx, { slotBytes: Math.max(8192, req.m * req.n * 4), slots: 2 });
    const pass = (small: boolean) => {
      const enc = ctx.device.createCommandEncoder();
      const p = enc.beginComputePass();
      op.encode(p, req.m);
      p.end();
      const t = rb.encodeCopy(enc, y, 0, small ? 4 * Math.min(req.m * req.n, 2048) : req.m * req.n * 4);
      ctx.device.queue.submit([enc.finish()]);
      return t;
    };
    const out = await rb.read(pass(false));
    const times: number[] = [];
    for (let i = 0; i < req.reads; i++) {
      const t0 = performance.now();
      await rb.read(pass(true), { key: 'selftest' });
      times.push(performance.now() - t0);
    }
    const sleeper = createSleeper();
    const sleeps: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now();
      await sleeper.sleep(0.15);
      sleeps.push(performance.now() - t0);
    }
    return { y: out, readbackMs: times, sleepMs: sleeps, pokes: rb.stats.pokes };
  } finally {
    destroyGpuContext(ctx);
  }
}

self.onmessage = (e: MessageEvent<SelfTestRequest>) => {
  run(e.data).then(
    (r) => self.postMessage(r),
    (err: unknown) => self.postMessage({ error: String((err as Error)?.message ?? err) }),
  );
};
