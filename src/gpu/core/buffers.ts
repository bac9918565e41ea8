/**
 * The GPU resources the engine allocates and the kernels bind: plain storage buffers, weight
 * matrices (split across bindings when larger than one binding may be), and the per-step
 * parameters every op reads.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from './device.js';
import { chunkSpans, padRows, paddedStride, planMatrixChunks } from './layout.js';
import { acquireBuffer, releaseBuffer } from './pool.js';

const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;

/** A storage buffer (also copy source and destination), filled from `data` when given. */
export function createStorageBuffer(ctx: GpuContext, bytesOrData: number | ArrayBufferView, label?: string): GPUBuffer {
  const bytes = typeof bytesOrData === 'number' ? bytesOrData : bytesOrData.byteLength;
  if (bytes > ctx.limits.maxBufferSize) {
    throw new InvalidArgumentError(`buffer ${label ?? ''} of ${bytes} bytes exceeds maxBufferSize ${ctx.limits.maxBufferSize}`);
  }
  const size = Math.max(16, Math.ceil(bytes / 4) * 4);
  const buf = ctx.device.createBuffer({ size, usage: STORAGE, label, mappedAtCreation: typeof bytesOrData !== 'number' });
  if (typeof bytesOrData !== 'number') {
    const src = new Uint8Array(bytesOrData.buffer, bytesOrData.byteOffset, bytesOrData.byteLength);
    new Uint8Array(buf.getMappedRange()).set(src);
    buf.unmap();
  }
  return buf;
}

export function destroyStorageBuffer(buf: GPUBuffer): void {
  buf.destroy();
}

/**
 * A weight matrix W[n][k] (a row per output unit), stored as row chunks, each in its own buffer
 * of at most `maxStorageBufferBindingSize` bytes. Rows are padded to a multiple of 4 floats
 * (zeros) so that kernels read them as vec4.
 */
export interface Matrix {
  n: number;
  k: number;
  /** Row stride in floats: k rounded up to a multiple of 4. */
  stride: number;
  chunks: MatrixChunk[];
  label: string;
}

export interface MatrixChunk {
  buffer: GPUBuffer;
  rowStart: number;
  rows: number;
}

/** The buffers of an (n, k) matrix of `elementBytes`-byte values in padded rows, chunked under the binding limit. */
export function createMatrixChunks(ctx: GpuContext, n: number, k: number, label: string, elementBytes = 4): MatrixChunk[] {
  const limit = Math.min(ctx.limits.maxStorageBufferBindingSize, ctx.limits.maxBufferSize);
  return planMatrixChunks(n, k, limit, elementBytes).map((c, i) => ({
    buffer: ctx.device.createBuffer({ size: c.bytes, usage: STORAGE, label: `${label}[${i}]` }),
    rowStart: c.rowStart,
    rows: c.rows,
  }));
}

export function createMatrix(ctx: GpuContext, n: number, k: number, label = 'matrix', data?: Float32Array): Matrix {
  const mat: Matrix = { n, k, stride: paddedStride(k), chunks: createMatrixChunks(ctx, n, k, label), label };
  if (data) writeMatrixRows(ctx, mat, 0, data);
  return mat;
}

/** Writes dense rows (stride k) starting at row `rowStart`; they may span chunks. */
export function writeMatrixRows(ctx: GpuContext, mat: Matrix, rowStart: number, data: Float32Array): void {
  const rows = Math.floor(data.length / mat.k);
  if (rows * mat.k !== data.length || rowStart + rows > mat.n) {
    throw new InvalidArgumentError(`${mat.label}: expected whole rows of ${mat.k} within ${mat.n}, got ${data.length} floats at row ${rowStart}`);
  }
  for (const { c, r0, r1 } of chunkSpans(mat.chunks, rowStart, rows)) {
    const part = padRows(data.subarray((r0 - rowStart) * mat.k, (r1 - rowStart) * mat.k), r1 - r0, mat.k);
    ctx.device.queue.writeBuffer(c.buffer, (r0 - c.rowStart) * mat.stride * 4, part.buffer, part.byteOffset, part.byteLength);
  }
}

export function destroyMatrix(mat: Matrix): void {
  for (const c of mat.chunks) c.buffer.destroy();
  mat.chunks = [];
}

/**
 * What changes from step to step, shared by every op and written once per step:
 * u32 words `[0] = m` (rows this step), `[1] = maxM`, `[2..3]` reserved,
 * `[4 .. 4+maxM)` positions (row r is at position positions[r] of its sequence),
 * `[4+maxM .. 4+2·maxM)` slots (row r belongs to KV-cache sequence slot slots[r]).
 */
export interface StepParams {
  buffer: GPUBuffer;
  maxM: number;
  /** Writes m and the rows' positions and slots (slots default to 0). */
  write(m: number, positions: ArrayLike<number>, slots?: ArrayLike<number>): void;
}

export function createStepParams(ctx: GpuContext, maxM: number): StepParams {
  if (!(maxM >= 1)) throw new InvalidArgumentError(`maxM must be ≥ 1, got ${maxM}`);
  const words = new Uint32Array(4 + 2 * maxM);
  words[1] = maxM;
  const buffer = ctx.device.createBuffer({ size: words.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, label: 'step' });
  return {
    buffer,
    maxM,
    write(m, positions, slots) {
      if (m < 1 || m > maxM) throw new InvalidArgumentError(`m must be in 1..${maxM}, got ${m}`);
      words[0] = m;
      for (let r = 0; r < m; r++) {
        words[4 + r] = positions[r]!;
        words[4 + maxM + r] = slots ? slots[r]! : 0;
      }
      // Only the live part: 16 bytes of header, then the two rows of m words.
      ctx.device.queue.writeBuffer(buffer, 0, words.buffer, 0, (4 + m) * 4);
      ctx.device.queue.writeBuffer(buffer, (4 + maxM) * 4, words.buffer, (4 + maxM) * 4, m * 4);
    },
  };
}

export function destroyStepParams(step: StepParams): void {
  step.buffer.destroy();
}

/** A uniform block of u32/f32 words for one op, from the pool. */
export function createParamBlock(ctx: GpuContext, words: ArrayLike<number>, floatIdx: readonly number[] = [], label?: string): GPUBuffer {
  const u = new Uint32Array(Math.max(4, Math.ceil(words.length / 4) * 4));
  const f = new Float32Array(u.buffer);
  for (let i = 0; i < words.length; i++) {
    if (floatIdx.includes(i)) f[i] = words[i]!;
    else u[i] = words[i]!;
  }
  const buf = acquireBuffer(ctx.pool, u.byteLength, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label);
  ctx.device.queue.writeBuffer(buf, 0, u);
  return buf;
}

export function destroyParamBlock(ctx: GpuContext, buf: GPUBuffer): void {
  releaseBuffer(ctx.pool, buf);
}
