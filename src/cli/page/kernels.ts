/**
 * Page-side entry points of `webgpu-tp bench kernels` (src/cli/bench-kernels.ts), exposed as
 * `window.tp.kernels.*`: matmul variants, attention, quantised decode, readback latency and the
 * read roofline, timed with GPU timestamps where the adapter has them.
 */
import type { GemmKind, GemvKind, SmallGemmKind, GpuContext } from '../../gpu/core/device.js';
import { createMatrix, createStepParams, createStorageBuffer, destroyMatrix, destroyStepParams, type Matrix } from '../../gpu/core/buffers.js';
import type { MatmulInput, Q8Activations } from '../../gpu/kernels/matmul-base.js';
import { createMatmul } from '../../gpu/kernels/matmul.js';
import { availableGemm, availableGemv, availableSmall } from '../../gpu/kernels/matmul-f32.js';
import { createQuantMatrix, destroyQuantMatrix, isQuantMatrix, writeQuantRows, type QuantMatrix } from '../../gpu/core/quant-matrix.js';
import { createHalfMatrix, destroyHalfMatrix, isHalfMatrix, writeHalfRows, type HalfMatrix } from '../../gpu/core/half-matrix.js';
import type { BoundOp } from '../../gpu/core/op.js';
import { createAdd } from '../../gpu/kernels/elementwise.js';
import { createKvCache, destroyKvCache } from '../../gpu/kernels/kv-cache.js';
import type { KvCacheDtype } from '../../gpu/kernels/kv-format.js';
import { createAttention, attentionKinds } from '../../gpu/kernels/attention.js';
import type { AttentionKind } from '../../gpu/kernels/kv-shaders.js';
import { createReadback, destroyReadback } from '../../gpu/core/readback.js';
import { quantizeQ8 } from '../../model/reference-q8.js';
import { quantizeQ4 } from '../../model/reference-q4.js';
import { quantize } from '../../model/formats/gguf-blocks.js';
import type { KernelBenchReport, KernelBenchRow } from '../bench-kernels.js';
import { context, gpuTimes, matmulInWorker, randn, rng, runOps, stepFor } from './gpu.js';
import { benchRoofline } from './roofline.js';
import { median } from './median.js';

/** Weights of a benchmarked matmul: f32, f16, or quantised in groups of 32 (weight-only). */
export type BenchWeights = 'f32' | 'f16' | 'q8_0' | 'q4_0';

function benchWeights(ctx: GpuContext, kind: BenchWeights, n: number, k: number, w: Float32Array<ArrayBuffer>): Matrix | QuantMatrix | HalfMatrix {
  if (kind === 'f32') return createMatrix(ctx, n, k, 'w', w);
  if (kind === 'f16') {
    const m = createHalfMatrix(ctx, n, k, 'wf16');
    writeHalfRows(ctx, m, 0, new Uint16Array(quantize('F16', w).buffer));
    return m;
  }
  const m = createQuantMatrix(ctx, n, k, 32, `w${kind}`, kind);
  const t = kind === 'q4_0' ? quantizeQ4(w) : quantizeQ8(w, n * k, 32);
  writeQuantRows(ctx, m, 0, t.q, t.s);
  return m;
}

/** What a benchmarked matmul runs with: its case, or the adapter's choices where unset. */
export interface BenchMatmulCase { m: number; k: number; n: number; gemv?: GemvKind; gemm?: GemmKind; small?: SmallGemmKind; weights?: BenchWeights; activations?: Q8Activations; input?: 'plain' | 'rmsnorm' | 'siluMul' }

/** A matmul of the case on `ctx` with seeded random data, and what frees it. */
export function benchMatmulOp(ctx: GpuContext, c: BenchMatmulCase): { op: BoundOp; destroy(): void } {
  const { m, k, n } = c;
  const step = createStepParams(ctx, m);
  step.write(m, new Uint32Array(m));
  const rand = rng(3);
  // siluMul reads a and b as the two halves of one row of width 2k, as the model's w2 does.
  const xStride = c.input === 'siluMul' ? 2 * k : k;
  const x = createStorageBuffer(ctx, randn(m * xStride, rand));
  const g = createStorageBuffer(ctx, randn(k, rand));
  const w = benchWeights(ctx, c.weights ?? 'f32', n, k, randn(n * k, rand));
  const y = createStorageBuffer(ctx, m * n * 4);
  const input: MatmulInput =
    c.input === 'rmsnorm' ? { kind: 'rmsnorm', weight: g, eps: 1e-5 }
      : c.input === 'siluMul' ? { kind: 'siluMul', b: x, bOffset: k, bStride: xStride }
        : { kind: 'plain' };
  const op = createMatmul(ctx, step, { x, xStride, w, y, maxM: m, gemv: c.gemv, gemm: c.gemm, small: c.small, activations: c.activations, input });
  return {
    op,
    destroy() {
      op.destroy();
      if (isQuantMatrix(w)) destroyQuantMatrix(w);
      else if (isHalfMatrix(w)) destroyHalfMatrix(w);
      else destroyMatrix(w);
      x.destroy();
      y.destroy();
      g.destroy();
      destroyStepParams(step);
    },
  };
}

export async function benchMatmulRaw(c: BenchMatmulCase & { reps?: number }): Promise<{ gpuMs: number; wallMs: number }> {
  const ctx = await context();
  const { m } = c;
  const reps = c.reps ?? 10;
  const { op, destroy } = benchMatmulOp(ctx, c);
  await runOps(ctx, [op], m);
  await ctx.device.queue.onSubmittedWorkDone();
  const gpuMs = ctx.features.timestampQuery ? median(await gpuTimes(ctx, (p) => op.encode(p, m), reps)) : NaN;
  const t0 = performance.now();
  await runOps(ctx, Array(reps).fill(op), m);
  await ctx.device.queue.onSubmittedWorkDone();
  const wallMs = (performance.now() - t0) / reps;
  destroy();
  return { gpuMs, wallMs };
}

export function jsMatmul(m: number, k: number, n: number, reps = 3): number {
  const rand = rng(5);
  const x = randn(m * k, rand);
  const w = randn(n * k, rand);
  const y = new Float32Array(m * n);
  const t: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    for (let r = 0; r < m; r++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        const wo = j * k;
        const xo = r * k;
        for (let q = 0; q < k; q++) s += x[xo + q]! * w[wo + q]!;
        y[r * n + j] = s;
      }
    }
    t.push(performance.now() - t0);
  }
  return median(t);
}

export interface ReadbackBench {
  median: number;
  p90: number;
  /** GPU time of the dispatch (timestamp queries), ms. */
  gpuMs: number;
  pokesPerRead: number;
}

/**
 * Submit (work + copy of 8 KB) → data on the CPU, `reps` times. `work`: 'tiny' is one small
 * elementwise dispatch; a number N is a 2048×N gemv. `mode`: the plain mapAsync path, the
 * helper with a caller estimate ('expected'), or the helper learning the duration ('learnt').
 */
export async function benchReadback(o: { work: 'tiny' | number; mode: 'plain' | 'expected' | 'learnt'; reps?: number; pokeIntervalMs?: number }): Promise<ReadbackBench> {
  const ctx = await context();
  const reps = o.reps ?? 30;
  const step = stepFor(ctx, 1, [0]);
  const n = 2048;
  const rand = rng(11);
  const a = createStorageBuffer(ctx, randn(n, rand));
  const y = createStorageBuffer(ctx, randn(Math.max(n, typeof o.work === 'number' ? o.work : 0), rand));
  let op: BoundOp;
  let w: ReturnType<typeof createMatrix> | undefined;
  if (o.work === 'tiny') op = createAdd(ctx, step, { x: { buffer: a }, y: { buffer: y }, n, maxM: 1 });
  else {
    w = createMatrix(ctx, o.work, n, 'w', randn(o.work * n, rand));
    op = createMatmul(ctx, step, { x: a, w, y, maxM: 1 });
  }
  const gpuMs = ctx.features.timestampQuery ? median(await gpuTimes(ctx, (p) => op.encode(p, 1), 5)) : NaN;
  const rb = createReadback(ctx, { slotBytes: n * 4, slots: 2, pokeIntervalMs: o.pokeIntervalMs });
  const times: number[] = [];
  const pokes0 = rb.stats.pokes;
  for (let i = 0; i < reps + 3; i++) {
    const enc = ctx.device.createCommandEncoder();
    const pass = enc.beginComputePass();
    op.encode(pass, 1);
    pass.end();
    const t = rb.encodeCopy(enc, y, 0, n * 4);
    const t0 = performance.now();
    ctx.device.queue.submit([enc.finish()]);
    await rb.read(t, { plain: o.mode === 'plain', expectedMs: o.mode === 'expected' ? gpuMs : undefined, key: 'bench' });
    if (i >= 3) times.push(performance.now() - t0);
    // Let the GPU process settle so that reads do not overlap.
    await new Promise((r) => setTimeout(r, 1));
  }
  op.destroy();
  destroyReadback(ctx, rb);
  if (w) destroyMatrix(w);
  [a, y, step.buffer].forEach((b) => b.destroy());
  times.sort((p, q) => p - q);
  return { median: times[times.length >> 1]!, p90: times[Math.floor(times.length * 0.9)]!, gpuMs, pokesPerRead: (rb.stats.pokes - pokes0) / (reps + 3) };
}

type BenchRow = KernelBenchRow;

const gflops = (m: number, k: number, n: number, ms: number) => +((2 * m * k * n) / (ms * 1e6)).toFixed(3);
const round = (x: number) => +x.toFixed(4);

/**
 * The matmul benchmark of `webgpu-tp bench kernels` (see src/cli/bench-kernels.ts). `quick`
 * times only the kernels (the adapter's choice and every available variant), skipping the JS,
 * tfjs and readback figures.
 */
export async function bench(o: { smoke?: boolean; quick?: boolean } = {}): Promise<KernelBenchReport> {
  const ctx = await context();
  const smoke = !!o.smoke;
  const shapes: [number, number, number][] = smoke
    ? [[1, 64, 64], [4, 32, 48]]
    : [[1, 2048, 2048], [1, 768, 2048], [1, 2048, 768], [128, 1024, 1024]];
  const reps = smoke ? 2 : 7;
  const results: BenchRow[] = [];
  for (const [m, k, n] of shapes) {
    const { gpuMs } = await benchMatmulRaw({ m, k, n, reps });
    results.push({ kernel: m === 1 ? `gemv_${ctx.choices.gemv}` : `gemm_${ctx.choices.gemm}`, m, k, n, median_ms: round(gpuMs), gflops: gflops(m, k, n, gpuMs) });
  }
  // Every variant this adapter can run, on the same shapes (the chosen one included).
  const variantRows: BenchRow[] = [];
  for (const [m, k, n] of shapes) {
    const kinds: string[] = m === 1 ? availableGemv(ctx) : availableGemm(ctx);
    for (const kind of kinds) {
      const { gpuMs } = await benchMatmulRaw(m === 1 ? { m, k, n, reps, gemv: kind as GemvKind } : { m, k, n, reps: smoke ? 2 : 3, gemm: kind as GemmKind });
      variantRows.push({ kernel: `${m === 1 ? 'gemv' : 'gemm'}_${kind}`, m, k, n, median_ms: round(gpuMs), gflops: gflops(m, k, n, gpuMs) });
    }
  }
  // A decode batch of 8 rows through each small-m variant, its input RMSNorm-fused as most of a
  // model's matmuls' are (stories15M's classifier shape at TP = 2 unless smoke).
  const [sk, sn] = smoke ? [64, 64] : [288, 16000];
  for (const kind of availableSmall(ctx)) {
    const { gpuMs } = await benchMatmulRaw({ m: 8, k: sk, n: sn, reps: smoke ? 2 : 3, small: kind, input: 'rmsnorm' });
    variantRows.push({ kernel: `small_${kind}`, m: 8, k: sk, n: sn, median_ms: round(gpuMs), gflops: gflops(8, sk, sn, gpuMs) });
  }
  // Attention at decode: one row at position 255 (stories15M's heads), one row and 8 rows,
  // over an f32 cache and an f16 one (`_f16kv`: packed halves here, native with shader-f16).
  for (const kind of attentionKinds(ctx, 48)) {
    for (const kvDtype of ['f32', 'f16'] as const) {
      for (const m of smoke ? [1] : [1, 8]) {
        const ms = await benchAttention({ m, nHeads: 6, nKv: 6, headSize: 48, pos: smoke ? 15 : 255, maxSeq: 256, kind, reps, kvDtype });
        // q·k and p·v: 4·hs FLOPs per head per key.
        const flops = m * 6 * (smoke ? 16 : 256) * 4 * 48;
        variantRows.push({ kernel: `attention_${kind}${kvDtype === 'f16' ? '_f16kv' : ''}`, m, k: 48, n: smoke ? 16 : 256, median_ms: round(ms), gflops: round(flops / (ms * 1e6)) });
      }
    }
  }
  // Decode with f16 and quantised weights (groups of 32) against the adapter's f32 gemv:
  // weight-only, and Q4_0 with int8 activations (W4A8, its input quantisation included in the
  // time). They take turns, and each keeps its best median of the rounds: on a shared CPU
  // adapter, load from other processes comes and goes within one kernel's repetitions.
  const quant: BenchRow[] = [];
  const quantRuns = [
    { kernel: `gemv_${ctx.choices.gemv}`, weights: 'f32' },
    { kernel: 'gemv_f16', weights: 'f16' },
    { kernel: 'gemv_q8_0', weights: 'q8_0' },
    { kernel: 'gemv_q4_0', weights: 'q4_0' },
    { kernel: 'gemv_q4_0_int8', weights: 'q4_0', activations: 'int8' },
  ] as const;
  for (const d of smoke ? [64] : [768, 2048]) {
    const best = quantRuns.map(() => Infinity);
    for (let round = 0; round < (smoke ? 1 : 5); round++) {
      for (const [i, q] of quantRuns.entries()) {
        const activations = 'activations' in q ? q.activations : undefined;
        best[i] = Math.min(best[i]!, (await benchMatmulRaw({ m: 1, k: d, n: d, reps, weights: q.weights, activations })).gpuMs);
      }
    }
    quantRuns.forEach((q, i) => quant.push({ kernel: q.kernel, m: 1, k: d, n: d, median_ms: round(best[i]!), gflops: gflops(1, d, d, best[i]!) }));
  }
  const choices = { gemm: ctx.choices.gemm, gemv: ctx.choices.gemv, small: ctx.choices.small, measured: Object.fromEntries(Object.entries(ctx.choices.measured).map(([a, b]) => [a, round(b)])) };
  const adapter = { vendor: ctx.adapterInfo.vendor, architecture: ctx.adapterInfo.architecture };
  const roofline = await benchRoofline(ctx, gpuTimes, smoke ? 256 : 2048, reps);
  if (o.quick) {
    const none = { median_ms: 0, p90_ms: 0, pokes_per_read: 0 };
    return {
      adapter, choices, results, variants: variantRows, quant, baselines: { js: [], tfjs: [] }, roofline, readback_ms: 0,
      readback: { tiny: { helper: none, plain: none }, long: { helper: none, learnt: none, plain: none, gpu_ms: 0 }, worker_tiny_ms: 0 },
    };
  }
  const js: BenchRow[] = [];
  for (const [m, k, n] of shapes) {
    jsMatmul(m, k, n, 1);
    const ms = jsMatmul(m, k, n, smoke ? 1 : m > 1 ? 3 : 11);
    js.push({ kernel: 'js', m, k, n, median_ms: round(ms), gflops: gflops(m, k, n, ms) });
  }
  const tfjs = await benchTfjs(shapes, smoke ? 2 : 7);

  const rr = smoke ? 6 : 40;
  const fig = (b: ReadbackBench) => ({ median_ms: round(b.median), p90_ms: round(b.p90), pokes_per_read: round(b.pokesPerRead) });
  const tinyHelper = await benchReadback({ work: 'tiny', mode: 'learnt', reps: rr });
  const tinyPlain = await benchReadback({ work: 'tiny', mode: 'plain', reps: rr });
  // A gemv sized to take ~4 ms on this adapter (2048 × N, N from a quick estimate).
  const probe = await benchReadback({ work: 256, mode: 'plain', reps: 2 });
  const longN = smoke ? 256 : Math.max(64, Math.min(65536, Math.round((256 * 4) / Math.max(0.05, probe.gpuMs))));
  const longExpected = await benchReadback({ work: longN, mode: 'expected', reps: rr });
  const longLearnt = await benchReadback({ work: longN, mode: 'learnt', reps: rr });
  const longPlain = await benchReadback({ work: longN, mode: 'plain', reps: rr });
  const inWorker = (await matmulInWorker(rr)).reply;
  return {
    adapter,
    choices,
    results,
    variants: variantRows,
    quant,
    baselines: { js, tfjs },
    roofline,
    readback_ms: round(tinyHelper.median),
    readback: {
      tiny: { helper: fig(tinyHelper), plain: fig(tinyPlain) },
      long: { helper: fig(longExpected), learnt: fig(longLearnt), plain: fig(longPlain), gpu_ms: round(longPlain.gpuMs) },
      worker_tiny_ms: round(inWorker.error || !inWorker.y ? NaN : median(inWorker.readbackMs ?? [NaN])),
    },
  };
}

/** tfjs-webgpu's tf.matMul(x, w, false, true): inputs uploaded once, timing matMul + data(). */
async function benchTfjs(shapes: [number, number, number][], reps: number): Promise<BenchRow[]> {
  const tf = await import('@tensorflow/tfjs-core');
  await import('@tensorflow/tfjs-backend-webgpu');
  await tf.setBackend('webgpu');
  await tf.ready();
  const out: BenchRow[] = [];
  for (const [m, k, n] of shapes) {
    const rand = rng(13);
    const x = tf.tensor2d(randn(m * k, rand), [m, k]);
    const w = tf.tensor2d(randn(n * k, rand), [n, k]);
    const once = async () => {
      const t0 = performance.now();
      const y = tf.matMul(x, w, false, true);
      await y.data();
      y.dispose();
      return performance.now() - t0;
    };
    await once();
    await once();
    const t: number[] = [];
    for (let i = 0; i < reps; i++) t.push(await once());
    const ms = median(t);
    out.push({ kernel: 'tfjs', m, k, n, median_ms: round(ms), gflops: gflops(m, k, n, ms) });
    x.dispose();
    w.dispose();
  }
  return out;
}

/** GPU ms of one attention dispatch: m rows, each in its own slot, at `pos` over a zeroed cache. */
export async function benchAttention(c: { m: number; nHeads: number; nKv: number; headSize: number; pos: number; maxSeq: number; kind?: AttentionKind; reps?: number; kvDtype?: KvCacheDtype }): Promise<number> {
  const ctx = await context();
  const cache = createKvCache(ctx, { nLayers: 1, nKvHeadsLocal: c.nKv, headSize: c.headSize, maxSeq: c.maxSeq, nSlots: c.m, dtype: c.kvDtype });
  const qDim = c.nHeads * c.headSize;
  const step = stepFor(ctx, c.m, Array(c.m).fill(c.pos), Array.from({ length: c.m }, (_, i) => i));
  const qb = createStorageBuffer(ctx, c.m * qDim * 4);
  const ob = createStorageBuffer(ctx, c.m * qDim * 4);
  const op = createAttention(ctx, step, { q: qb, qStride: qDim, nHeads: c.nHeads, cache, layer: 0, out: ob, maxM: c.m, kind: c.kind });
  await runOps(ctx, [op], c.m);
  const g = median(await gpuTimes(ctx, (p) => op.encode(p, c.m), c.reps ?? 9));
  op.destroy();
  destroyKvCache(cache);
  [qb, ob, step.buffer].forEach((b) => b.destroy());
  return g;
}
