import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCollectiveBuffer, createCollectiveMemory, isMemory, type CollectiveBuffer } from './layout.js';
import { pickAllReduce, type AllReduceChoice } from './all-reduce.js';
import { RankPool } from '../../test-support/collective/pool.js';
import { firstBitDifference, randomFloats, rankOrderSum, referenceSum } from '../../test-support/collective/data.js';
import type { RankOp } from '../../test-support/collective/ops.js';

const WORLDS = [1, 2, 3, 4, 8];
const ALGORITHMS: AllReduceChoice[] = ['one-shot', 'direct', 'auto'];
// The engine's largest all-reduce: maxRows (64) × dim (4096) floats.
const MAX = 2 ** 18;

let pool: RankPool;
beforeAll(async () => {
  pool = await RankPool.create(8);
});
afterAll(() => pool?.close());

// Both kinds of group buffer: the scalar JavaScript sums and the WebAssembly SIMD sums must give
// the same, documented-order bits. SIMD has 2, 3, 4 and more sources (add2/add3/add4, then add2
// chained): worlds 2, 3, 4 and 8 cover each path.
const BUFFERS = [
  ['a SharedArrayBuffer', createCollectiveBuffer, WORLDS],
  ['a WebAssembly.Memory', createCollectiveMemory, [2, 3, 4, 8]],
] as const;

describe.each(BUFFERS.flatMap(([kind, make, worlds]) => worlds.map((world) => [world, kind, make] as const)))('allReduce over %i ranks, %s', (world, kind, make) => {
  const lengths = [...new Set([1, Math.max(world - 1, 1), 2048, 65537, MAX])];
  let sab: CollectiveBuffer;
  beforeAll(() => {
    sab = make({ world, slotFloats: MAX });
    // Node 20 has WebAssembly SIMD and threads: the Memory case must not silently fall back.
    expect(isMemory(sab)).toBe(kind === 'a WebAssembly.Memory');
  });

  it.each(lengths)('%i floats: every algorithm gives the documented-order sum, bitwise on every rank', async (len) => {
    const seed = world * 1000 + len;
    const ops: RankOp[] = ALGORITHMS.map((algorithm) => ({ kind: 'allReduce', len, algorithm, seed }));
    // The same algorithms again back to back, through the zero-copy slot and into a separate output.
    if (len < MAX) {
      for (const algorithm of ALGORITHMS) ops.push({ kind: 'allReduce', len, algorithm, seed, zeroCopy: true });
      ops.push({ kind: 'allReduce', len, algorithm: 'direct', seed, outOfPlace: true });
    }
    const results = await pool.runAll(sab, world, ops, { timeoutMs: 30_000 });
    const expected = referenceSum(Array.from({ length: world }, (_, r) => randomFloats(len, seed, r)));
    ops.forEach((op, k) => {
      const want = op.kind === 'allReduce' && op.algorithm !== 'auto' ? op.algorithm : pickAllReduce(len, world);
      for (let r = 0; r < world; r++) {
        const got = results[r][k];
        expect(got.algorithm, `op ${k} rank ${r}`).toBe(want);
        expect(firstBitDifference(got.data!, expected), `op ${k} (${JSON.stringify(op)}) rank ${r} vs reference`).toBe(-1);
        expect(firstBitDifference(got.data!, results[0][k].data!), `op ${k} rank ${r} vs rank 0`).toBe(-1);
      }
    });
  });
});

describe('summation order', () => {
  it('the test data is order-sensitive: rank order and the documented order differ beyond chunk 0', () => {
    const inputs = [0, 1, 2].map((r) => randomFloats(4096, 7, r));
    expect(firstBitDifference(referenceSum(inputs), rankOrderSum(inputs))).toBeGreaterThan(0);
  });

  it('with two ranks the documented order is plain rank order', () => {
    const inputs = [0, 1].map((r) => randomFloats(4096, 7, r));
    expect(firstBitDifference(referenceSum(inputs), rankOrderSum(inputs))).toBe(-1);
  });
});

describe('auto', () => {
  it('follows the measured thresholds: one-shot for small vectors, direct above', () => {
    expect(pickAllReduce(288, 2)).toBe('one-shot');
    expect(pickAllReduce(2048, 2)).toBe('one-shot');
    expect(pickAllReduce(2049, 2)).toBe('direct');
    expect(pickAllReduce(4 * 2 ** 20, 2)).toBe('direct');
    for (const world of [3, 4, 8]) {
      expect(pickAllReduce(288, world)).toBe('one-shot');
      expect(pickAllReduce(4096, world)).toBe('one-shot');
      expect(pickAllReduce(4097, world)).toBe('direct');
      expect(pickAllReduce(4 * 2 ** 20, world)).not.toBe('one-shot');
    }
  });
});
