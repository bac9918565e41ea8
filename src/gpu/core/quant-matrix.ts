/**
 * Quantised weight matrices on the GPU, kept quantised; kernels dequantise as they read. Q8_0:
 * int8 values (four per u32 word, a row of k values is k/4 words); Q4_0 (GGML): nibbles (eight
 * per word, a row is k/8 words; word w of a group of 32 holds elements 4w..4w+3 in its low
 * nibbles and 16+4w..16+4w+3 in its high ones). Both have one f32 scale per group of
 * `groupSize` values along a row. q8_m (GGUF's Q4_1, Q5_x, K-quants): byte codes, four per word,
 * and an f32 (scale, min) pair per group. Like `Matrix`, split into row chunks that each fit one binding.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from './device.js';
import { chunkSpans, equalRowChunks } from './layout.js';

const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;

export type QuantKind = 'q8_0' | 'q4_0' | 'q8_m';

export interface QuantMatrix {
  kind: QuantKind;
  n: number;
  k: number;
  groupSize: number;
  chunks: QuantChunk[];
  label: string;
}

export interface QuantChunk {
  /** rows × k values: int8 (q8_0) or nibbles (q4_0). */
  q: GPUBuffer;
  /** rows × k/groupSize f32 scales (q8_m: scale, min pairs). */
  s: GPUBuffer;
  rowStart: number;
  rows: number;
}

export function isQuantMatrix(w: object): w is QuantMatrix {
  const kind = (w as QuantMatrix).kind;
  return kind === 'q8_0' || kind === 'q4_0' || kind === 'q8_m';
}

/** f32 words per group: a scale, or q8_m's (scale, min). */
export function quantGroupWords(kind: QuantKind): number {
  return kind === 'q8_m' ? 2 : 1;
}

/** Bytes of one row of k values. */
export function quantRowBytes(kind: QuantKind, k: number): number {
  return kind === 'q4_0' ? k / 2 : k;
}

export function createQuantMatrix(ctx: GpuContext, n: number, k: number, groupSize: number, label = 'q8', kind: QuantKind = 'q8_0'): QuantMatrix {
  if (kind === 'q4_0' && !(groupSize === 32 && k % 32 === 0)) {
    throw new InvalidArgumentError(`${label}: Q4_0 needs groups of 32 that divide k ${k}, got ${groupSize}`);
  }
  if (!(groupSize > 0 && groupSize % 4 === 0 && k % groupSize === 0)) {
    throw new InvalidArgumentError(`${label}: Q8_0 needs a group size that is a multiple of 4 and divides k ${k}, got ${groupSize}`);
  }
  const limit = Math.min(ctx.limits.maxStorageBufferBindingSize, ctx.limits.maxBufferSize);
  const qRow = quantRowBytes(kind, k);
  const gw = quantGroupWords(kind);
  const rowBytes = Math.max(qRow, (k / groupSize) * 4 * gw);
  if (rowBytes > limit) throw new InvalidArgumentError(`${label}: one row of ${k} values exceeds the binding limit of ${limit} bytes`);
  const chunks: QuantChunk[] = equalRowChunks(n, Math.floor(limit / rowBytes)).map(({ rowStart, rows }, c) => ({
    q: ctx.device.createBuffer({ size: Math.max(16, rows * qRow), usage: STORAGE, label: `${label}.q[${c}]` }),
    s: ctx.device.createBuffer({ size: Math.max(16, (rows * k) / groupSize * 4 * gw), usage: STORAGE, label: `${label}.s[${c}]` }),
    rowStart,
    rows,
  }));
  return { kind, n, k, groupSize, chunks, label };
}

/**
 * Writes whole rows from `rowStart`: their values plane (rows · row bytes: int8 for q8_0, packed
 * nibbles for q4_0) and scales (rows·k/groupSize); they may span chunks.
 */
export function writeQuantRows(ctx: GpuContext, m: QuantMatrix, rowStart: number, q: Int8Array | Uint8Array, s: Float32Array): void {
  const rb = quantRowBytes(m.kind, m.k);
  const rows = q.length / rb;
  const g = (m.k / m.groupSize) * quantGroupWords(m.kind);
  if (!Number.isInteger(rows) || s.length !== rows * g || rowStart + rows > m.n) {
    throw new InvalidArgumentError(`${m.label}: expected whole rows of ${rb} bytes and ${g} scales within ${m.n}, got ${q.length} and ${s.length} at row ${rowStart}`);
  }
  for (const { c, r0, r1 } of chunkSpans(m.chunks, rowStart, rows)) {
    const qs = q.subarray((r0 - rowStart) * rb, (r1 - rowStart) * rb);
    const ss = s.subarray((r0 - rowStart) * g, (r1 - rowStart) * g);
    ctx.device.queue.writeBuffer(c.q, (r0 - c.rowStart) * rb, qs.buffer, qs.byteOffset, qs.byteLength);
    ctx.device.queue.writeBuffer(c.s, (r0 - c.rowStart) * g * 4, ss.buffer, ss.byteOffset, ss.byteLength);
  }
}

export function destroyQuantMatrix(m: QuantMatrix): void {
  for (const c of m.chunks) {
    c.q.destroy();
    c.s.destroy();
  }
  m.chunks = [];
}
