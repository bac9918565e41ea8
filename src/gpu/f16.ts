/**
 * f16 weight matrices on the GPU, kept in f16: each row's halves as the file stores them, zero-
 * padded to a multiple of 4 (8 bytes, so a kernel reads a row as vec2<u32> words, or vec4<f16>
 * with shader-f16), split into row chunks that each fit one binding, like an f32 `Matrix`.
 * Half the bytes of f32, so half the memory and bandwidth; the kernels (f16-kernels.ts) widen
 * the halves to f32 as they load them and compute in f32.
 */
import { InvalidArgumentError } from '../errors.js';
import type { GpuContext } from './device.js';
import { createParamBlock, type MatrixChunk, type StepParams } from './buffers.js';
import { paddedStride, planMatrixChunks } from './layout.js';
import { makeOp, type BoundOp } from './op.js';
import { createTableEmbed, type EmbedIo } from './embed.js';
import { f16EmbedSource, f16KernelsFor, f16MatmulWgsl, type F16Kernels } from './f16-kernels.js';
import { bindChunk, encodeChunks, inputOf, matmulIo, type Q8MatmulOptions } from './matmul-q8.js';

const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
const WG = 64;

export interface HalfMatrix {
  kind: 'f16';
  n: number;
  k: number;
  /** Row stride in halves: k rounded up to a multiple of 4. */
  stride: number;
  chunks: MatrixChunk[];
  label: string;
}

export function isHalfMatrix(w: object): w is HalfMatrix {
  return (w as HalfMatrix).kind === 'f16';
}

/** The f16 kernels this context runs: native where the device has shader-f16, else packed. */
export function f16KernelsOf(ctx: GpuContext): F16Kernels {
  return f16KernelsFor(ctx.device.features);
}

export function createHalfMatrix(ctx: GpuContext, n: number, k: number, label = 'f16'): HalfMatrix {
  const limit = Math.min(ctx.limits.maxStorageBufferBindingSize, ctx.limits.maxBufferSize);
  const chunks = planMatrixChunks(n, k, limit, 2).map((c, i) => ({
    buffer: ctx.device.createBuffer({ size: c.bytes, usage: STORAGE, label: `${label}[${i}]` }),
    rowStart: c.rowStart,
    rows: c.rows,
  }));
  return { kind: 'f16', n, k, stride: paddedStride(k), chunks, label };
}

/** Writes dense rows of halves (stride k) from row `rowStart`, padding each to the stride; they may span chunks. */
export function writeHalfRows(ctx: GpuContext, m: HalfMatrix, rowStart: number, h: Uint16Array): void {
  const rows = Math.floor(h.length / m.k);
  if (rows * m.k !== h.length || rowStart + rows > m.n) {
    throw new InvalidArgumentError(`${m.label}: expected whole rows of ${m.k} halves within ${m.n}, got ${h.length} at row ${rowStart}`);
  }
  for (const c of m.chunks) {
    const r0 = Math.max(rowStart, c.rowStart);
    const r1 = Math.min(rowStart + rows, c.rowStart + c.rows);
    if (r0 >= r1) continue;
    let part = h.subarray((r0 - rowStart) * m.k, (r1 - rowStart) * m.k);
    if (m.stride !== m.k) {
      const padded = new Uint16Array((r1 - r0) * m.stride);
      for (let r = 0; r < r1 - r0; r++) padded.set(part.subarray(r * m.k, (r + 1) * m.k), r * m.stride);
      part = padded;
    }
    ctx.device.queue.writeBuffer(c.buffer, (r0 - c.rowStart) * m.stride * 2, part.buffer, part.byteOffset, part.byteLength);
  }
}

export function destroyHalfMatrix(m: HalfMatrix): void {
  for (const c of m.chunks) c.buffer.destroy();
  m.chunks = [];
}

/**
 * y (+)= xin · Wᵀ with f16 W, with the f32 matmul's fused RMSNorm / SiLU·mul inputs, bias and
 * accumulate. m = 1 runs a gemv (four rows of W per invocation), m > 1 a 4×4 register-blocked
 * gemm; one dispatch per row chunk of W.
 */
export function createF16Matmul(ctx: GpuContext, step: StepParams, o: Omit<Q8MatmulOptions, 'activations' | 'w'> & { w: HalfMatrix }): BoundOp {
  const { w, maxM } = o;
  const { K, xStride, xOffset, yStride } = matmulIo(step, o);
  const inp = inputOf(ctx, o.input, xStride);
  const aligned4 = (...v: number[]) => v.every((q) => q % 4 === 0);
  const vec4X = aligned4(K, xStride, xOffset) && (inp.mode !== 2 || aligned4(inp.bStride, inp.bOff));
  const code = f16MatmulWgsl(f16KernelsOf(ctx), vec4X);
  const constants = { HAS_BIAS: o.bias ? 1 : 0, ACCUMULATE: o.accumulate ? 1 : 0, MODE: inp.mode, ALIGNED: K % 4 === 0 ? 1 : 0 };
  const gemv = ctx.pipelines.get(code, 'gemv_f16', { ...constants, WG }, 'gemv_f16');
  const gemm = maxM > 1 ? ctx.pipelines.get(code, 'gemm_regblock', constants, 'gemm_f16') : undefined;
  const params: GPUBuffer[] = [];
  const chunks = w.chunks.map((c) => {
    // kStride4: the row stride in groups of 4 halves (one vec2<u32>).
    const p = createParamBlock(ctx, [K, c.rows, w.stride / 4, c.rowStart, yStride, xStride, xOffset, inp.bStride, inp.bOff, inp.eps, 0, 0], [9], `matmul ${w.label}`);
    params.push(p);
    return bindChunk(ctx, w.label, c.rows, gemv, gemm, (usesStep) => [usesStep ? step.buffer : undefined, p, o.x, c.buffer, o.y, o.bias ?? ctx.dummy, inp.aux]);
  });
  return makeOp(ctx, `matmul ${w.label}`, maxM, params, (pass, m) => {
    encodeChunks(pass, m, chunks, gemv, gemm, 4 * WG);
  });
}

/** y[r] = row tokens[r] of an f16 table, widened to f32 (exactly). */
export function createEmbedF16(ctx: GpuContext, step: StepParams, o: EmbedIo & { table: HalfMatrix }): BoundOp {
  const chunks = o.table.chunks.map((c) => ({ rowStart: c.rowStart, rows: c.rows, values: c.buffer }));
  const source = f16EmbedSource(f16KernelsOf(ctx));
  return createTableEmbed(ctx, step, o, { entry: 'embed_f16', sources: [source], dim: o.table.k, rowWords: o.table.stride / 2 }, chunks);
}
