import { describe, it, expect } from 'vitest';
import { ByteRouter, type ByteRun } from './route.js';

function file(n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + 7) & 255;
  return b;
}

describe('ByteRouter', () => {
  it('routes overlapping and row-strided runs whatever the chunk size', () => {
    const src = file(1000);
    // Rank 0: a contiguous range and a strided "row-parallel" set; rank 1: a replicated range.
    const runs0: ByteRun[] = [{ fileOffset: 10, length: 100, dstOffset: 0 }];
    for (let r = 0; r < 10; r++) runs0.push({ fileOffset: 500 + r * 40, length: 8, dstOffset: 100 + r * 8 });
    const runs1: ByteRun[] = [{ fileOffset: 0, length: 1000, dstOffset: 0 }];
    for (const chunk of [1, 7, 64, 999, 4096]) {
      const d0 = new Uint8Array(180);
      const d1 = new Uint8Array(1000);
      const router = new ByteRouter([{ runs: runs0, dst: d0 }, { runs: runs1, dst: d1 }]);
      for (let o = 0; o < src.length; o += chunk) router.push(src.subarray(o, o + chunk));
      expect(router.complete).toBe(true);
      expect(d1).toEqual(src);
      expect(d0.subarray(0, 100)).toEqual(src.subarray(10, 110));
      for (let r = 0; r < 10; r++) expect(d0.subarray(100 + r * 8, 108 + r * 8)).toEqual(src.subarray(500 + r * 40, 508 + r * 40));
      expect(router.progress(0)).toEqual({ copied: 180, needed: 180 });
    }
  });

  it('fills runs that overlap within one rank (a tied classifier inside the embedding)', () => {
    const src = file(300);
    const runs: ByteRun[] = [
      { fileOffset: 0, length: 300, dstOffset: 0 },
      { fileOffset: 20, length: 10, dstOffset: 300 },
    ];
    for (const chunk of [7, 40, 300]) {
      const dst = new Uint8Array(310);
      const router = new ByteRouter([{ runs, dst }]);
      for (let o = 0; o < src.length; o += chunk) router.push(src.subarray(o, o + chunk));
      expect(router.complete).toBe(true);
      expect(dst.subarray(0, 300)).toEqual(src);
      expect(dst.subarray(300)).toEqual(src.subarray(20, 30));
    }
  });

  it('rejects a run that overflows its shard', () => {
    expect(() => new ByteRouter([{ runs: [{ fileOffset: 0, length: 10, dstOffset: 5 }], dst: new Uint8Array(12) }])).toThrow(RangeError);
  });

  it('is incomplete when the file ends early', () => {
    const router = new ByteRouter([{ runs: [{ fileOffset: 0, length: 10, dstOffset: 0 }], dst: new Uint8Array(10) }]);
    router.push(new Uint8Array(5));
    expect(router.complete).toBe(false);
  });
});
