import { describe, expect, it } from 'vitest';
import { MAX_WORKGROUPS_PER_DIM, chunkSpans, equalRowChunks, grid2d, padRows, paddedStride, planMatrixChunks, wgsl } from './layout.js';
import { sizeClass } from './pool.js';

describe('grid2d', () => {
  it('keeps small counts 1-D', () => {
    expect(grid2d(1)).toEqual([1, 1]);
    expect(grid2d(65535)).toEqual([65535, 1]);
    expect(grid2d(0)).toEqual([1, 1]);
  });
  it('folds large counts under the per-dimension limit, covering every index', () => {
    for (const n of [65536, 151936, 1_100_000, 65535 * 65535]) {
      const [x, y] = grid2d(n);
      expect(x).toBeLessThanOrEqual(MAX_WORKGROUPS_PER_DIM);
      expect(y).toBeLessThanOrEqual(MAX_WORKGROUPS_PER_DIM);
      expect(x * y).toBeGreaterThanOrEqual(n);
      expect(x * y - n).toBeLessThan(x);
    }
  });
  it('refuses what no 2-D grid holds', () => {
    expect(() => grid2d(65535 * 65535 + 1)).toThrow(RangeError);
  });
});

describe('planMatrixChunks', () => {
  it('one chunk when the matrix fits', () => {
    expect(planMatrixChunks(1000, 64, 1 << 30)).toEqual([{ rowStart: 0, rows: 1000, bytes: 1000 * 64 * 4 }]);
  });
  it('splits rows evenly, each chunk within the limit, padded rows', () => {
    const plan = planMatrixChunks(151936, 17, 1 << 20);
    const rowBytes = paddedStride(17) * 4;
    expect(plan.length).toBe(Math.ceil((151936 * rowBytes) / (1 << 20)));
    let next = 0;
    for (const c of plan) {
      expect(c.rowStart).toBe(next);
      expect(c.bytes).toBeLessThanOrEqual(1 << 20);
      expect(c.bytes).toBe(c.rows * rowBytes);
      next += c.rows;
    }
    expect(next).toBe(151936);
    const rows = plan.map((c) => c.rows);
    expect(Math.max(...rows) - Math.min(...rows)).toBeLessThanOrEqual(1);
  });
  it('throws when a single row cannot fit', () => {
    expect(() => planMatrixChunks(2, 1000, 1000)).toThrow(/exceeds the binding limit/);
  });
  it('equal chunks of at most maxRows, the first ones a row longer (as the quantised matrices take them)', () => {
    expect(equalRowChunks(10, 4)).toEqual([{ rowStart: 0, rows: 4 }, { rowStart: 4, rows: 3 }, { rowStart: 7, rows: 3 }]);
    expect(equalRowChunks(8, 8)).toEqual([{ rowStart: 0, rows: 8 }]);
    expect(equalRowChunks(0, 8)).toEqual([{ rowStart: 0, rows: 0 }]);
  });
  it('a write of rows reaches the chunks it overlaps, with the rows of each it covers', () => {
    const chunks = equalRowChunks(10, 4);
    expect(chunkSpans(chunks, 3, 5).map(({ c, r0, r1 }) => [c.rowStart, r0, r1])).toEqual([[0, 3, 4], [4, 4, 7], [7, 7, 8]]);
    expect(chunkSpans(chunks, 4, 3).map(({ c, r0, r1 }) => [c.rowStart, r0, r1])).toEqual([[4, 4, 7]]);
    expect(chunkSpans(chunks, 10, 0)).toEqual([]);
  });
});

describe('row padding', () => {
  it('pads rows to a multiple of 4 with zeros', () => {
    expect(paddedStride(1)).toBe(4);
    expect(paddedStride(4)).toBe(4);
    expect(paddedStride(17)).toBe(20);
    const p = padRows(Float32Array.of(1, 2, 3, 4, 5, 6), 2, 3);
    expect(Array.from(p)).toEqual([1, 2, 3, 0, 4, 5, 6, 0]);
    const h = padRows(Uint16Array.of(1, 2, 3, 4, 5, 6), 2, 3);
    expect(h).toBeInstanceOf(Uint16Array);
    expect(Array.from(h)).toEqual([1, 2, 3, 0, 4, 5, 6, 0]);
  });
  it('returns the data itself when no padding is needed', () => {
    const d = new Float32Array(8);
    expect(padRows(d, 2, 4).buffer).toBe(d.buffer);
  });
});

describe('wgsl', () => {
  it('hoists enable directives to the top, once', () => {
    const code = wgsl('// a\nfn f() {}', 'enable subgroups;\nfn g() {}', 'enable subgroups;');
    expect(code.split('\n')[0]).toBe('enable subgroups;');
    expect(code.match(/enable subgroups;/g)).toHaveLength(1);
  });
});

describe('sizeClass', () => {
  it('rounds small sizes to 256 bytes and large ones to powers of two', () => {
    expect(sizeClass(1)).toBe(256);
    expect(sizeClass(300)).toBe(512);
    expect(sizeClass(65536)).toBe(65536);
    expect(sizeClass(65537)).toBe(131072);
  });
});
