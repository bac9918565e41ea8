/**
 * Page-side entry points of the kernel tests, exposed as `window.tp.kernels.*` on the test page.
 * Each test builds random inputs from a seed, runs the GPU kernel and the CPU oracle
 * (src/model/reference.ts) in the page, and returns only a summary: the worst error as a
 * fraction of its tolerance (`worst ≤ 1` passes), so Playwright moves a few bytes, not tensors.
 */
import * as ref from '../../src/model/reference.js';
import { destroyGpuContext, type GemmKind, type GemvKind, type SmallGemmKind, type GpuContext } from '../../src/gpu/core/device.js';
import { createGpuContext } from '../../src/gpu/tune.js';
import { createMatrix, createStepParams, createStorageBuffer, destroyMatrix, destroyStepParams, type StepParams } from '../../src/gpu/core/buffers.js';
import type { BoundOp } from '../../src/gpu/core/op.js';
import type { MatmulInput, Q8Activations } from '../../src/gpu/kernels/matmul-base.js';
import { createMatmul, type MatmulOptions } from '../../src/gpu/kernels/matmul.js';
import { availableGemm, availableGemv, availableSmall } from '../../src/gpu/kernels/matmul-f32.js';
import { createAdd } from '../../src/gpu/kernels/elementwise.js';
import { createEmbedding } from '../../src/gpu/kernels/embed.js';
import { createKvCache, destroyKvCache, kvIndex, type KvCache } from '../../src/gpu/kernels/kv-cache.js';
import type { KvCacheDtype } from '../../src/gpu/kernels/kv-format.js';
import { createRopeKv, createRopeTables, destroyRopeTables, type RopeStyle } from '../../src/gpu/kernels/rope.js';
import { createAttention, attentionKinds } from '../../src/gpu/kernels/attention.js';
import type { AttentionKind } from '../../src/gpu/kernels/kv-shaders.js';
import { createReadback, destroyReadback } from '../../src/gpu/core/readback.js';
import { f32ToF16 } from '../../src/model/formats/gguf-blocks.js';
import { f16ToF32 } from '../../src/model/formats/safetensors.js';
import { WebGpuTpError } from '../../src/errors.js';
import { context, matmulInWorker, randn, rng, runOps, stepFor } from '../../src/cli/page/gpu.js';
import { median } from '../../src/cli/page/median.js';


export async function info(): Promise<{ adapter: GpuContext['adapterInfo']; limits: GpuContext['limits']; features: GpuContext['features']; choices: GpuContext['choices'] }> {
  const ctx = await context();
  return { adapter: ctx.adapterInfo, limits: ctx.limits, features: ctx.features, choices: ctx.choices };
}


const abs = (a: Float32Array) => a.map(Math.abs);

export async function readFloats(ctx: GpuContext, buf: GPUBuffer, floats: number, offset = 0): Promise<Float32Array> {
  const bytes = floats * 4;
  const staging = ctx.device.createBuffer({ size: Math.max(16, bytes), usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
  const enc = ctx.device.createCommandEncoder();
  enc.copyBufferToBuffer(buf, offset * 4, staging, 0, bytes);
  ctx.device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = new Float32Array(staging.getMappedRange().slice(0));
  staging.destroy();
  return out;
}


/** Catches validation errors of everything run inside `fn` (they are asynchronous in WebGPU). */
export async function checked<T>(ctx: GpuContext, fn: () => Promise<T>): Promise<T> {
  ctx.device.pushErrorScope('validation');
  let out: T;
  try {
    out = await fn();
  } finally {
    const err = await ctx.device.popErrorScope();
    if (err) throw new Error(`WebGPU validation: ${err.message}`);
  }
  return out;
}

export interface Check {
  /** Largest |gpu − ref| / tolerance; ≤ 1 passes. */
  worst: number;
  /** Index of the worst element and its values, for failure messages. */
  at: number;
  gpu: number;
  ref: number;
  n: number;
}

/** |gpu − ref| ≤ rel · mag + abs, elementwise; mag is the op's sum of magnitudes. */
export function compare(gpu: ArrayLike<number>, want: ArrayLike<number>, mag: ArrayLike<number> | number, rel = 1e-5, absTol = 1e-6): Check {
  let worst = 0;
  let at = -1;
  for (let i = 0; i < want.length; i++) {
    const tol = rel * (typeof mag === 'number' ? mag : mag[i]!) + absTol;
    const e = Math.abs(gpu[i]! - want[i]!);
    const r = e === 0 ? 0 : Number.isFinite(e) ? e / tol : Infinity;
    if (r > worst || at < 0) {
      worst = r;
      at = i;
    }
  }
  return { worst, at, gpu: gpu[at]!, ref: want[at]!, n: want.length };
}

export interface MatmulCase {
  m: number;
  k: number;
  n: number;
  seed?: number;
  input?: 'plain' | 'rmsnorm' | 'siluMul';
  bias?: boolean;
  accumulate?: boolean;
  gemv?: GemvKind;
  gemm?: GemmKind;
  small?: SmallGemmKind;
  /** Run on a fresh context that pretends storage bindings hold at most this many bytes. */
  bindingLimit?: number;
}

/** A matmul case for one stored weight kind, whose kernel is not chosen by the case. */
export type WeightMatmulCase = Omit<MatmulCase, 'gemv' | 'gemm' | 'small'>;

/** A matmul case's fused input: x as it is, RMSNorm(x)·g, or silu(a)·b over the two halves of a row. */
export type CaseInput = 'plain' | 'rmsnorm' | 'siluMul';

/** The random data of a matmul case besides W (see `matmulCaseData`). */
export interface MatmulCaseData {
  input: CaseInput;
  /** siluMul reads a and b as the two halves of one row of width 2k. */
  xStride: number;
  xData: Float32Array<ArrayBuffer>;
  g: Float32Array<ArrayBuffer>;
  bias: Float32Array<ArrayBuffer>;
  y0: Float32Array<ArrayBuffer>;
}

/**
 * Draws a case's x, then W (`drawW`, the caller's kind of weights), then g, bias and y0: one
 * order for every weight kind, so a seed gives the same x and W values across the tests.
 */
export function matmulCaseData<W>(rand: () => number, m: number, k: number, n: number, input: CaseInput, drawW: () => W): MatmulCaseData & { w: W } {
  const xStride = input === 'siluMul' ? 2 * k : k;
  const xData = randn(m * xStride, rand);
  const w = drawW();
  return { input, xStride, xData, w, g: randn(k, rand), bias: randn(n, rand), y0: randn(m * n, rand) };
}

/**
 * xin (m×k), the input the kernel multiplies: `silu` rounds SwiGLU as the oracle compared with
 * does (default reference.ts; runq.c's order for the int8 kernels).
 */
export function effectiveInput(d: MatmulCaseData, m: number, k: number, silu?: (a: number, b: number) => number): Float32Array {
  const xin = new Float32Array(m * k);
  for (let r = 0; r < m; r++) {
    const row = d.xData.subarray(r * d.xStride, r * d.xStride + k);
    const b = d.xData.subarray(r * d.xStride + k, r * d.xStride + 2 * k);
    const out = xin.subarray(r * k, (r + 1) * k);
    if (d.input === 'rmsnorm') ref.rmsnorm(out, row, d.g, 1, k, 1e-5);
    else if (d.input === 'siluMul' && silu) for (let i = 0; i < k; i++) out[i] = silu(row[i]!, b[i]!);
    else if (d.input === 'siluMul') ref.siluMul(out, row, b, k);
    else out.set(row);
  }
  return xin;
}

/** Adds the case's bias and accumulated y0 (when asked) to the wanted sums and their magnitudes. */
export function addBiasAccumulate(d: MatmulCaseData, want: Float32Array, mag: Float32Array, n: number, c: { bias?: boolean; accumulate?: boolean }): void {
  for (let i = 0; i < want.length; i++) {
    if (c.bias) {
      want[i] = Math.fround(want[i]! + d.bias[i % n]!);
      mag[i] = mag[i]! + Math.abs(d.bias[i % n]!);
    }
    if (c.accumulate) {
      want[i] = Math.fround(want[i]! + d.y0[i]!);
      mag[i] = mag[i]! + Math.abs(d.y0[i]!);
    }
  }
}

/** Runs the matmul of a case on uploaded weights `w` (left for the caller to free); returns y. */
export async function runMatmulCase(
  ctx: GpuContext, d: MatmulCaseData, m: number, k: number, n: number, w: MatmulOptions['w'],
  c: { bias?: boolean; accumulate?: boolean; activations?: Q8Activations; gemv?: GemvKind; gemm?: GemmKind; small?: SmallGemmKind },
): Promise<Float32Array> {
  const step = createStepParams(ctx, m);
  step.write(m, new Uint32Array(m));
  const x = createStorageBuffer(ctx, d.xData);
  const y = createStorageBuffer(ctx, d.y0);
  const gb = createStorageBuffer(ctx, d.g);
  const bb = createStorageBuffer(ctx, d.bias);
  const input: MatmulInput =
    d.input === 'rmsnorm' ? { kind: 'rmsnorm', weight: gb, eps: 1e-5 }
      : d.input === 'siluMul' ? { kind: 'siluMul', b: x, bOffset: k, bStride: d.xStride }
        : { kind: 'plain' };
  const op = createMatmul(ctx, step, {
    x, xStride: d.xStride, w, y, maxM: m, input, bias: c.bias ? bb : undefined, accumulate: c.accumulate,
    activations: c.activations, gemv: c.gemv, gemm: c.gemm, small: c.small,
  });
  try {
    await runOps(ctx, [op], m);
    return await readFloats(ctx, y, m * n);
  } finally {
    op.destroy();
    for (const b of [x, y, gb, bb]) b.destroy();
    destroyStepParams(step);
  }
}

export async function testMatmul(c: MatmulCase): Promise<Check & { chunks: number }> {
  const own = c.bindingLimit !== undefined;
  const ctx = own ? await createGpuContext({ bindingLimit: c.bindingLimit, tune: false }) : await context();
  try {
    return await checked(ctx, async () => {
      const { m, k, n } = c;
      const rand = rng(c.seed ?? 1);
      const d = matmulCaseData(rand, m, k, n, c.input ?? 'plain', () => randn(n * k, rand));
      // Oracle: the effective input, then matmul; magnitudes from |xin|·|w|.
      const xin = effectiveInput(d, m, k);
      const want = new Float32Array(m * n);
      ref.matmul(want, xin, d.w, m, k, n);
      const mag = new Float32Array(m * n);
      ref.matmul(mag, abs(xin), abs(d.w), m, k, n);
      addBiasAccumulate(d, want, mag, n, c);

      const w = createMatrix(ctx, n, k, 'w', d.w);
      const chunks = w.chunks.length;
      const got = await runMatmulCase(ctx, d, m, k, n, w, c).finally(() => destroyMatrix(w));
      return { ...compare(got, want, mag), chunks };
    });
  } finally {
    if (own) destroyGpuContext(ctx);
  }
}

/** Runs `body` on the shared context (or a fresh one with a binding limit), catching validation errors. */
export async function withCtx<T>(bindingLimit: number | undefined, body: (ctx: GpuContext) => Promise<T>): Promise<T> {
  const own = bindingLimit !== undefined;
  const ctx = own ? await createGpuContext({ bindingLimit, tune: false }) : await context();
  try {
    return await checked(ctx, () => body(ctx));
  } finally {
    if (own) destroyGpuContext(ctx);
  }
}

export async function testAdd(c: { m: number; n: number; seed?: number }): Promise<Check> {
  return withCtx(undefined, async (ctx) => {
    const rand = rng(c.seed ?? 4);
    const x = randn(c.m * c.n, rand);
    const y = randn(c.m * c.n, rand);
    const want = y.slice();
    ref.add(want, x, c.m * c.n);
    const step = stepFor(ctx, c.m, new Uint32Array(c.m));
    const [xb, yb] = [createStorageBuffer(ctx, x), createStorageBuffer(ctx, y)];
    const op = createAdd(ctx, step, { x: { buffer: xb }, y: { buffer: yb }, n: c.n, maxM: c.m });
    await runOps(ctx, [op], c.m);
    const got = await readFloats(ctx, yb, c.m * c.n);
    op.destroy();
    [xb, yb, step.buffer].forEach((b) => b.destroy());
    return compare(got, want, 0, 0, 0);
  });
}

export async function testEmbed(c: { vocab: number; dim: number; tokens: number[]; bindingLimit?: number; seed?: number }): Promise<Check & { chunks: number }> {
  return withCtx(c.bindingLimit, async (ctx) => {
    const rand = rng(c.seed ?? 5);
    const m = c.tokens.length;
    const table = randn(c.vocab * c.dim, rand);
    const want = new Float32Array(m * c.dim);
    ref.embed(want, table, c.tokens, c.dim);
    const t = createMatrix(ctx, c.vocab, c.dim, 'embedding', table);
    const chunks = t.chunks.length;
    const got = await runEmbedCase(ctx, c.tokens, c.dim, (step, tokens, y) => createEmbedding(ctx, step, { table: t, tokens, y, maxM: m }))
      .finally(() => destroyMatrix(t));
    return { ...compare(got, want, 0, 0, 0), chunks };
  });
}

/**
 * Runs the embedding op `make` builds on fresh token and output buffers, for every kind of
 * table; returns the rows it wrote (the table is left for the caller to free).
 */
export async function runEmbedCase(
  ctx: GpuContext, tokens: number[], dim: number, make: (step: StepParams, tokens: GPUBuffer, y: GPUBuffer) => BoundOp,
): Promise<Float32Array> {
  const m = tokens.length;
  const step = stepFor(ctx, m, new Uint32Array(m));
  const tok = createStorageBuffer(ctx, Uint32Array.from(tokens));
  const y = createStorageBuffer(ctx, m * dim * 4);
  const op = make(step, tok, y);
  try {
    await runOps(ctx, [op], m);
    return await readFloats(ctx, y, m * dim);
  } finally {
    op.destroy();
    [tok, y, step.buffer].forEach((b) => b.destroy());
  }
}

interface KvCase {
  nHeads: number;
  nKv: number;
  headSize: number;
  /** Row r at positions[r] of slot slots[r]. */
  positions: number[];
  slots?: number[];
  nSlots?: number;
  seed?: number;
  kind?: AttentionKind;
  /** The cache's values (default f32); f16 runs the packed kernels where there is no shader-f16. */
  kvDtype?: KvCacheDtype;
}

/** A layer buffer of the cache as f32 values (halves decoded). */
async function cacheValues(ctx: GpuContext, cache: KvCache, buf: GPUBuffer): Promise<Float32Array> {
  const words = await readFloats(ctx, buf, buf.size / 4);
  if (cache.dtype === 'f32') return words;
  return Float32Array.from(new Uint16Array(words.buffer), f16ToF32);
}

/** f32 values in the cache's format, for writeBuffer. */
function cacheBytes(cache: KvCache, values: Float32Array<ArrayBuffer>): Float32Array<ArrayBuffer> | Uint16Array<ArrayBuffer> {
  return cache.dtype === 'f32' ? values : Uint16Array.from(values, f32ToF16);
}

/** Reads a layer of the cache back as the oracle's (seq, nKv·hs) layout for one slot. */
async function cacheAsRef(ctx: GpuContext, cache: KvCache, buf: GPUBuffer, slot: number, seq: number): Promise<Float32Array> {
  const all = await cacheValues(ctx, cache, buf);
  const kvDim = cache.nKvHeadsLocal * cache.headSize;
  const out = new Float32Array(seq * kvDim);
  for (let t = 0; t < seq; t++) {
    for (let h = 0; h < cache.nKvHeadsLocal; h++) {
      const src = kvIndex(cache, slot, h, t);
      out.set(all.subarray(src, src + cache.headSize), t * kvDim + h * cache.headSize);
    }
  }
  return out;
}

/** ropeKv: q, k rotated and k, v in the cache at (slot, pos). */
export async function testKvWrite(c: KvCase & { style?: RopeStyle }): Promise<Check> {
  return withCtx(undefined, async (ctx) => {
    const rand = rng(c.seed ?? 8);
    const m = c.positions.length;
    const slots = c.slots ?? c.positions.map(() => 0);
    const nSlots = c.nSlots ?? Math.max(...slots) + 1;
    const hs = c.headSize;
    const qDim = c.nHeads * hs;
    const kvDim = c.nKv * hs;
    const stride = qDim + 2 * kvDim;
    const maxSeq = Math.max(...c.positions) + 2;
    const qkv = randn(m * stride, rand);
    const pos = Uint32Array.from(c.positions);
    const tables = ref.ropeTables(hs, maxSeq, 10000);
    const style = c.style ?? 'interleaved';
    // Oracle: split, rotate q and k, and place k, v rows into per-slot caches.
    const q = new Float32Array(m * qDim);
    const k = new Float32Array(m * kvDim);
    const v = new Float32Array(m * kvDim);
    for (let r = 0; r < m; r++) {
      q.set(qkv.subarray(r * stride, r * stride + qDim), r * qDim);
      k.set(qkv.subarray(r * stride + qDim, r * stride + qDim + kvDim), r * kvDim);
      v.set(qkv.subarray(r * stride + qDim + kvDim, (r + 1) * stride), r * kvDim);
    }
    const qIn = q.slice();
    const kIn = k.slice();
    ref.rope(q, m, c.nHeads, hs, pos, tables, style);
    ref.rope(k, m, c.nKv, hs, pos, tables, style);
    // An f16 cache holds k and v rounded to nearest even: v (copied) must be exactly that; a
    // rotated k may round the other way when the GPU's f32 rotation is an ulp off the oracle's.
    const f16 = c.kvDtype === 'f16';
    if (f16) {
      ref.roundToF16(k);
      ref.roundToF16(v);
    }
    const kRound = f16 ? 2 ** -11 / 1e-5 : 1;
    const step = stepFor(ctx, m, pos, slots);
    const cache = createKvCache(ctx, { nLayers: 2, nKvHeadsLocal: c.nKv, headSize: hs, maxSeq, nSlots, dtype: c.kvDtype });
    const qkvb = createStorageBuffer(ctx, qkv);
    const tb = createRopeTables(ctx, hs, tables);
    const op = createRopeKv(ctx, step, { qkv: qkvb, rowStride: stride, nHeads: c.nHeads, cache, layer: 1, tables: tb, style, maxM: m });
    await runOps(ctx, [op], m);
    const got: number[] = [];
    const want: number[] = [];
    const mag: number[] = [];
    const pairMag = (src: Float32Array, i: number) => {
      const within = i % hs;
      const half = hs / 2;
      const partner = style === 'interleaved' ? i + (within % 2 === 0 ? 1 : -1) : i + (within < half ? half : -half);
      return Math.abs(src[i]!) + Math.abs(src[partner]!);
    };
    for (let r = 0; r < m; r++) {
      const kc = await cacheAsRef(ctx, cache, cache.k[1]!, slots[r]!, maxSeq);
      const vc = await cacheAsRef(ctx, cache, cache.v[1]!, slots[r]!, maxSeq);
      for (let i = 0; i < kvDim; i++) {
        got.push(kc[pos[r]! * kvDim + i]!, vc[pos[r]! * kvDim + i]!);
        want.push(k[r * kvDim + i]!, v[r * kvDim + i]!);
        mag.push(kRound * pairMag(kIn, r * kvDim + i), 0);
      }
    }
    const all = await readFloats(ctx, qkvb, m * stride);
    for (let r = 0; r < m; r++) {
      for (let i = 0; i < qDim; i++) {
        got.push(all[r * stride + i]!);
        want.push(q[r * qDim + i]!);
        mag.push(pairMag(qIn, r * qDim + i));
      }
    }
    op.destroy();
    destroyKvCache(cache);
    destroyRopeTables(tb);
    [qkvb, step.buffer].forEach((b) => b.destroy());
    return compare(got, want, mag);
  });
}

/**
 * Attention of m rows over a random cache. Rows at positions[r] of slots[r]; the cache holds
 * random k, v for every position ≤ max(positions) in every slot.
 */
export async function testAttention(c: KvCase): Promise<Check> {
  return withCtx(undefined, async (ctx) => {
    const rand = rng(c.seed ?? 9);
    const m = c.positions.length;
    const slots = c.slots ?? c.positions.map(() => 0);
    const nSlots = c.nSlots ?? Math.max(...slots) + 1;
    const hs = c.headSize;
    const qDim = c.nHeads * hs;
    const kvDim = c.nKv * hs;
    const maxSeq = Math.max(...c.positions) + 1;
    const cache = createKvCache(ctx, { nLayers: 1, nKvHeadsLocal: c.nKv, headSize: hs, maxSeq, nSlots, dtype: c.kvDtype });
    // An f16 cache: the oracle attends over the same halves (f16 → f32 is exact).
    // Per slot, the oracle's (seq, kvDim) layout, and the same data in the cache's layout.
    const kRef: Float32Array[] = [];
    const vRef: Float32Array[] = [];
    const kAll = new Float32Array(nSlots * c.nKv * maxSeq * hs);
    const vAll = new Float32Array(nSlots * c.nKv * maxSeq * hs);
    for (let s = 0; s < nSlots; s++) {
      const kr = randn(maxSeq * kvDim, rand);
      const vr = randn(maxSeq * kvDim, rand);
      if (cache.dtype === 'f16') {
        ref.roundToF16(kr);
        ref.roundToF16(vr);
      }
      kRef.push(kr);
      vRef.push(vr);
      for (let t = 0; t < maxSeq; t++) {
        for (let h = 0; h < c.nKv; h++) {
          kAll.set(kr.subarray(t * kvDim + h * hs, t * kvDim + (h + 1) * hs), kvIndex(cache, s, h, t));
          vAll.set(vr.subarray(t * kvDim + h * hs, t * kvDim + (h + 1) * hs), kvIndex(cache, s, h, t));
        }
      }
    }
    ctx.device.queue.writeBuffer(cache.k[0]!, 0, cacheBytes(cache, kAll));
    ctx.device.queue.writeBuffer(cache.v[0]!, 0, cacheBytes(cache, vAll));
    // q rows with a stride wider than qDim (as in a packed qkv buffer).
    const qStride = qDim + 2 * kvDim;
    const qData = randn(m * qStride, rand);
    const want = new Float32Array(m * qDim);
    const mag = new Float32Array(m * qDim);
    for (let r = 0; r < m; r++) {
      const q = qData.slice(r * qStride, r * qStride + qDim);
      const p = Uint32Array.of(c.positions[r]!);
      const o = new Float32Array(qDim);
      ref.attention(o, q, kRef[slots[r]!]!, vRef[slots[r]!]!, 1, p, c.nHeads, c.nKv, hs, kvDim);
      want.set(o, r * qDim);
      // Σ p_t |v_t| (attention over |v|), widened by the score magnitudes that feed exp.
      const om = new Float32Array(qDim);
      ref.attention(om, q, kRef[slots[r]!]!, vRef[slots[r]!]!.map(Math.abs), 1, p, c.nHeads, c.nKv, hs, kvDim);
      let smax = 0;
      for (let t = 0; t <= c.positions[r]!; t++) {
        for (let h = 0; h < c.nHeads; h++) {
          let s = 0;
          const kv = Math.floor(h / (c.nHeads / c.nKv));
          for (let i = 0; i < hs; i++) s += Math.abs(q[h * hs + i]! * kRef[slots[r]!]![t * kvDim + kv * hs + i]!);
          smax = Math.max(smax, s / Math.sqrt(hs));
        }
      }
      for (let i = 0; i < qDim; i++) mag[r * qDim + i] = om[i]! * (1 + smax);
    }
    const step = stepFor(ctx, m, c.positions, slots);
    const qb = createStorageBuffer(ctx, qData);
    const ob = createStorageBuffer(ctx, m * qDim * 4);
    const op = createAttention(ctx, step, { q: qb, qStride, nHeads: c.nHeads, cache, layer: 0, out: ob, maxM: m, kind: c.kind });
    await runOps(ctx, [op], m);
    const got = await readFloats(ctx, ob, m * qDim);
    op.destroy();
    destroyKvCache(cache);
    [qb, ob, step.buffer].forEach((b) => b.destroy());
    // The exact kernel is run.c's arithmetic: equal to the oracle bit for bit.
    return c.kind === 'exact' ? compare(got, want, 0, 0, 0) : compare(got, want, mag);
  });
}

export async function variants(): Promise<{ gemv: GemvKind[]; gemm: GemmKind[]; small: SmallGemmKind[] }> {
  const ctx = await context();
  return { gemv: availableGemv(ctx), gemm: availableGemm(ctx), small: availableSmall(ctx) };
}

/** createGpuContext with no adapter must throw WebGpuUnavailableError (code NO_WEBGPU). */
export async function testContextErrors(): Promise<{ code?: string; name?: string }> {
  const gpu = navigator.gpu;
  const original = gpu.requestAdapter;
  gpu.requestAdapter = async () => null;
  try {
    await createGpuContext({ tune: false });
    return {};
  } catch (e) {
    return { code: e instanceof WebGpuTpError ? e.code : undefined, name: (e as Error).name };
  } finally {
    gpu.requestAdapter = original;
  }
}

/** A context, matmul and readback inside a dedicated worker, checked against the oracle here. */
export async function testInWorker(reads = 5): Promise<Check & { readbackMs: number; readbackAll?: number[]; sleepMs?: number[]; pokes?: number; error?: string }> {
  const { req, reply } = await matmulInWorker(reads);
  const { m, k, n, x, w } = req;
  if (reply.error || !reply.y) return { worst: Infinity, at: -1, gpu: NaN, ref: NaN, n: 0, readbackMs: NaN, error: reply.error ?? 'no result' };
  const want = new Float32Array(m * n);
  ref.matmul(want, x, w, m, k, n);
  const mag = new Float32Array(m * n);
  ref.matmul(mag, abs(x), abs(w), m, k, n);
  return { ...compare(reply.y, want, mag), readbackMs: median(reply.readbackMs ?? [NaN]), readbackAll: reply.readbackMs, sleepMs: reply.sleepMs, pokes: reply.pokes };
}

/** The readback helper: data arrives intact, `into` is filled, tickets are single-use, slots recycle. */
export async function testReadback(): Promise<{ ok: boolean; detail: string }> {
  return withCtx(undefined, async (ctx) => {
    const data = randn(2048, rng(31));
    const src = createStorageBuffer(ctx, data);
    const rb = createReadback(ctx, { slotBytes: 8192, slots: 2 });
    const problems: string[] = [];
    for (let i = 0; i < 5; i++) {
      const enc = ctx.device.createCommandEncoder();
      const t1 = rb.encodeCopy(enc, src, 0, 8192);
      const t2 = rb.encodeCopy(enc, src, 4096, 4096);
      let threw = false;
      try {
        rb.encodeCopy(enc, src, 0, 4);
      } catch {
        threw = true;
      }
      if (!threw) problems.push('a third ticket on two slots did not throw');
      ctx.device.queue.submit([enc.finish()]);
      const into = new Float32Array(1024);
      const [a, b] = await Promise.all([rb.read(t1, { expectedMs: i === 0 ? undefined : 0.2 }), rb.read(t2, { into, plain: i % 2 === 1 })]);
      if (a.length !== 2048 || a.some((v, j) => v !== data[j])) problems.push(`read ${i}: full copy differs`);
      if (b !== into || into.some((v, j) => v !== data[1024 + j])) problems.push(`read ${i}: into copy differs`);
      let again = false;
      await rb.read(t1).catch(() => (again = true));
      if (!again) problems.push('a ticket could be read twice');
    }
    destroyReadback(ctx, rb);
    src.destroy();
    return { ok: problems.length === 0, detail: problems.join('; ') };
  });
}

/**
 * `quietOverMs`: a read whose learnt time reaches it is left to Chromium's own polling (no
 * pokes), and still completes with its data; below it (or without it) the helper pokes.
 */
export async function testReadbackQuiet(): Promise<{ quietPokes: number; pokedPokes: number; intact: boolean }> {
  return withCtx(undefined, async (ctx) => {
    const data = randn(1024, rng(37));
    const src = createStorageBuffer(ctx, data);
    const rb = createReadback(ctx, { slotBytes: 4096, slots: 1 });
    let intact = true;
    const reads = async (quietOverMs?: number) => {
      const before = rb.stats.pokes;
      for (let i = 0; i < 4; i++) {
        const enc = ctx.device.createCommandEncoder();
        const t = rb.encodeCopy(enc, src, 0, 4096);
        ctx.device.queue.submit([enc.finish()]);
        const got = await rb.read(t, { key: `quiet:${quietOverMs}`, quietOverMs });
        if (got.some((v, j) => v !== data[j])) intact = false;
      }
      return rb.stats.pokes - before;
    };
    // Every read is expected to take ≥ 0 ms: none is poked. Without the option, the first read of
    // a key pokes at once (nothing learnt yet), so pokes show up.
    const quietPokes = await reads(0);
    const pokedPokes = await reads(undefined);
    destroyReadback(ctx, rb);
    src.destroy();
    return { quietPokes, pokedPokes, intact };
  });
}

/**
 * One attention block through the fused kernels, prefill (positions 0..4) then one decode step
 * (position 5): x += Wo · attention(rope(Wqkv · rmsnorm(x))), against the oracle op by op.
 */
export async function testFusedChain(): Promise<Check> {
  return withCtx(undefined, async (ctx) => {
    const dim = 48;
    const nHeads = 4;
    const nKv = 2;
    const hs = 12;
    const qDim = nHeads * hs;
    const kvDim = nKv * hs;
    const qkvDim = qDim + 2 * kvDim;
    const maxSeq = 8;
    const rand = rng(41);
    const g = randn(dim, rand);
    const wqkv = randn(qkvDim * dim, rand, 0.3);
    const wo = randn(dim * qDim, rand, 0.3);
    const tables = ref.ropeTables(hs, maxSeq, 10000);
    const style: RopeStyle = 'rotate_half';
    const maxM = 5;

    const step = createStepParams(ctx, maxM);
    const xb = createStorageBuffer(ctx, maxM * dim * 4);
    const gb = createStorageBuffer(ctx, g);
    const qkvb = createStorageBuffer(ctx, maxM * qkvDim * 4);
    const attb = createStorageBuffer(ctx, maxM * qDim * 4);
    const wq = createMatrix(ctx, qkvDim, dim, 'wqkv', wqkv);
    const wob = createMatrix(ctx, dim, qDim, 'wo', wo);
    const cache = createKvCache(ctx, { nLayers: 1, nKvHeadsLocal: nKv, headSize: hs, maxSeq, nSlots: 1 });
    const tb = createRopeTables(ctx, hs, tables);
    const ops = [
      createMatmul(ctx, step, { x: xb, w: wq, y: qkvb, maxM, input: { kind: 'rmsnorm', weight: gb, eps: 1e-5 } }),
      createRopeKv(ctx, step, { qkv: qkvb, rowStride: qkvDim, nHeads, cache, layer: 0, tables: tb, style, maxM }),
      createAttention(ctx, step, { q: qkvb, qStride: qkvDim, nHeads, cache, layer: 0, out: attb, maxM }),
      createMatmul(ctx, step, { x: attb, w: wob, y: xb, maxM, accumulate: true }),
    ];

    // Oracle state: a (seq, kvDim) cache per run.c.
    const kc = new Float32Array(maxSeq * kvDim);
    const vc = new Float32Array(maxSeq * kvDim);
    const oracle = (x: Float32Array, m: number, positions: Uint32Array) => {
      const xn = new Float32Array(m * dim);
      ref.rmsnorm(xn, x, g, m, dim, 1e-5);
      const qkv = new Float32Array(m * qkvDim);
      ref.matmul(qkv, xn, wqkv, m, dim, qkvDim);
      const q = new Float32Array(m * qDim);
      const k = new Float32Array(m * kvDim);
      for (let r = 0; r < m; r++) {
        q.set(qkv.subarray(r * qkvDim, r * qkvDim + qDim), r * qDim);
        k.set(qkv.subarray(r * qkvDim + qDim, r * qkvDim + qDim + kvDim), r * kvDim);
        vc.set(qkv.subarray(r * qkvDim + qDim + kvDim, (r + 1) * qkvDim), positions[r]! * kvDim);
      }
      ref.rope(q, m, nHeads, hs, positions, tables, style);
      ref.rope(k, m, nKv, hs, positions, tables, style);
      for (let r = 0; r < m; r++) kc.set(k.subarray(r * kvDim, (r + 1) * kvDim), positions[r]! * kvDim);
      const att = new Float32Array(m * qDim);
      ref.attention(att, q, kc, vc, m, positions, nHeads, nKv, hs, kvDim);
      const o = new Float32Array(m * dim);
      ref.matmul(o, att, wo, m, qDim, dim);
      const y = x.slice();
      ref.add(y, o, m * dim);
      return y;
    };

    let worst: Check = { worst: 0, at: -1, gpu: 0, ref: 0, n: 0 };
    for (const positions of [Uint32Array.of(0, 1, 2, 3, 4), Uint32Array.of(5)]) {
      const m = positions.length;
      const x = randn(m * dim, rand);
      ctx.device.queue.writeBuffer(xb, 0, x);
      step.write(m, positions);
      await runOps(ctx, ops, m);
      const got = await readFloats(ctx, xb, m * dim);
      const want = oracle(x, m, positions);
      let scale = 0;
      for (const v of want) scale = Math.max(scale, Math.abs(v));
      // Errors compound over five ops; bound them by 10 × the largest output.
      const c = compare(got, want, 10 * scale);
      if (c.worst >= worst.worst) worst = c;
    }
    ops.forEach((op) => op.destroy());
    destroyKvCache(cache);
    destroyRopeTables(tb);
    destroyMatrix(wq);
    destroyMatrix(wob);
    [xb, gb, qkvb, attb, step.buffer].forEach((b) => b.destroy());
    return worst;
  });
}

export async function attentionVariants(headSize: number): Promise<AttentionKind[]> {
  return attentionKinds(await context(), headSize);
}
