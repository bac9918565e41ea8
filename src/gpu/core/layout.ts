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
  const maxRows = Math.floor(maxBindingBytes / rowBytes);
  const nChunks = Math.max(1, Math.ceil(n / maxRows));
  const base = Math.floor(n / nChunks);
  const extra = n % nChunks;
  const plan: MatrixChunkPlan[] = [];
  let rowStart = 0;
  for (let c = 0; c < nChunks; c++) {
    const rows = base + (c < extra ? 1 : 0);
    plan.push({ rowStart, rows, bytes: Math.max(16, rows * rowBytes) });
    rowStart += rows;
  }
  return plan;
}

/** Copies dense rows (stride k) into rows of stride paddedStride(k), zero-filling the padding. */
export function padRows(data: Float32Array, rows: number, k: number): Float32Array {
  const s = paddedStride(k);
  if (s === k) return data.subarray(0, rows * k);
  const out = new Float32Array(rows * s);
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
