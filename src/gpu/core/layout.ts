/**
 * Pure planning helpers (no GPU calls), unit-tested in layout.test.ts: dispatch grids under the
 * per-dimension workgroup limit, weight chunking under the storage-binding limit, row padding.
 */

/** WebGPU's guaranteed (and usual) per-dimension workgroup count. */
export const MAX_WORKGROUPS_PER_DIM = 65535;

/**
 * Folds `count` workgroups into an (x, y) grid with x, y ≤ max; shaders recover the linear index
 * as `wid.x + wid.y * nwg.x` and skip indices ≥ count (at most x − 1 spare workgroups).
 */
export function grid2d(count: number, max = MAX_WORKGROUPS_PER_DIM): [number, number] {
  if (count <= max) return [Math.max(1, count), 1];
  const y = Math.ceil(count / max);
  if (y > max) throw new RangeError(`${count} workgroups exceed ${max}² per dispatch`);
  return [Math.ceil(count / y), y];
}

/** Weight rows are stored with this stride (floats) so that every row starts on a vec4. */
export function paddedStride(k: number): number {
  return Math.ceil(k / 4) * 4;
}

export interface MatrixChunkPlan {
  /** First row of the chunk. */
  rowStart: number;
  rows: number;
  /** Bytes of the chunk's buffer: rows × paddedStride(k) × the element's bytes. */
  bytes: number;
}

/**
 * Splits an (n, k) matrix into row ranges whose bytes each fit one storage binding (and one
 * buffer). Chunks are as equal as possible so that no dispatch is left with a sliver.
 * `elementBytes`: 4 for f32 rows, 2 for f16 ones.
 */
export function planMatrixChunks(n: number, k: number, maxBindingBytes: number, elementBytes = 4): MatrixChunkPlan[] {
  const rowBytes = paddedStride(k) * elementBytes;
  if (rowBytes > maxBindingBytes) {
    throw new RangeError(`one row of ${k} values (${rowBytes} bytes) exceeds the binding limit of ${maxBindingBytes} bytes`);
  }
  return equalRowChunks(n, Math.floor(maxBindingBytes / rowBytes)).map((c) => ({ ...c, bytes: Math.max(16, c.rows * rowBytes) }));
}

/** Rows [0, n) in the fewest chunks of at most `maxRows`, as equal as possible (the first ones get the extra row). */
export function equalRowChunks(n: number, maxRows: number): { rowStart: number; rows: number }[] {
  const nChunks = Math.max(1, Math.ceil(n / maxRows));
  const base = Math.floor(n / nChunks);
  const extra = n % nChunks;
  const chunks: { rowStart: number; rows: number }[] = [];
  for (let c = 0, rowStart = 0; c < nChunks; c++) {
    const rows = base + (c < extra ? 1 : 0);
    chunks.push({ rowStart, rows });
    rowStart += rows;
  }
  return chunks;
}

/** The chunks that rows [rowStart, rowStart + rows) reach, each with the rows of it they cover, [r0, r1). */
export function chunkSpans<C extends { rowStart: number; rows: number }>(chunks: readonly C[], rowStart: number, rows: number): { c: C; r0: number; r1: number }[] {
  const spans: { c: C; r0: number; r1: number }[] = [];
  for (const c of chunks) {
    const r0 = Math.max(rowStart, c.rowStart);
    const r1 = Math.min(rowStart + rows, c.rowStart + c.rows);
    if (r0 < r1) spans.push({ c, r0, r1 });
  }
  return spans;
}

/** Copies dense rows (stride k) of floats or halves into rows of stride paddedStride(k), zero-filling the padding. */
export function padRows<T extends Float32Array | Uint16Array>(data: T, rows: number, k: number): T {
  const s = paddedStride(k);
  if (s === k) return data.subarray(0, rows * k) as T;
  const out = new (data.constructor as new (n: number) => T)(rows * s);
  for (let r = 0; r < rows; r++) out.set(data.subarray(r * k, r * k + k), r * s);
  return out;
}

/** Puts the `enable` directives of several WGSL parts first, as WGSL requires. */
export function wgsl(...parts: string[]): string {
  const enables = new Set<string>();
  const body: string[] = [];
  for (const p of parts) {
    for (const line of p.split('\n')) {
      if (/^\s*enable\s+\w+\s*;/.test(line)) enables.add(line.trim());
      else body.push(line);
    }
  }
  return [...enables, ...body].join('\n');
}
