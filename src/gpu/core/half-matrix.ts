/**
 * f16 weight matrices on the GPU, kept in f16: each row's halves as the file stores them, zero-
 * padded to a multiple of 4 (8 bytes, so a kernel reads a row as vec2<u32> words, or vec4<f16>
 * with shader-f16), split into row chunks that each fit one binding, like an f32 `Matrix`.
 * Half the bytes of f32, so half the memory and bandwidth; the kernels (kernels/f16-shaders.ts)
 * widen the halves to f32 as they load them and compute in f32.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from './device.js';
import { createMatrixChunks, type MatrixChunk } from './buffers.js';
import { chunkSpans, padRows, paddedStride } from './layout.js';

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

export function createHalfMatrix(ctx: GpuContext, n: number, k: number, label = 'f16'): HalfMatrix {
  return { kind: 'f16', n, k, stride: paddedStride(k), chunks: createMatrixChunks(ctx, n, k, label, 2), label };
}

/** Writes dense rows of halves (stride k) from row `rowStart`, padding each to the stride; they may span chunks. */
export function writeHalfRows(ctx: GpuContext, m: HalfMatrix, rowStart: number, h: Uint16Array): void {
  const rows = Math.floor(h.length / m.k);
  if (rows * m.k !== h.length || rowStart + rows > m.n) {
    throw new InvalidArgumentError(`${m.label}: expected whole rows of ${m.k} halves within ${m.n}, got ${h.length} at row ${rowStart}`);
  }
  for (const { c, r0, r1 } of chunkSpans(m.chunks, rowStart, rows)) {
    const part = padRows(h.subarray((r0 - rowStart) * m.k, (r1 - rowStart) * m.k), r1 - r0, m.k);
    ctx.device.queue.writeBuffer(c.buffer, (r0 - c.rowStart) * m.stride * 2, part.buffer, part.byteOffset, part.byteLength);
  }
}

export function destroyHalfMatrix(m: HalfMatrix): void {
  for (const c of m.chunks) c.buffer.destroy();
  m.chunks = [];
}
