import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { createCollectiveBuffer } from './layout.js';
import { RankPool } from '../../test-support/collective/pool.js';
import { firstBitDifference, randomFloats } from '../../test-support/collective/data.js';

let pool: RankPool;
beforeAll(async () => {
  pool = await RankPool.create(4);
});
afterAll(() => pool?.close());

function expected(counts: number[], seed: number): Float32Array {
  const out = new Float32Array(counts.reduce((a, b) => a + b, 0));
  let at = 0;
  counts.forEach((n, r) => {
    out.set(randomFloats(n, seed, r), at);
    at += n;
  });
  return out;
}

describe('allGather', () => {
  it.each([
    [[512]],
    [[256, 256]],
    [[171, 171, 170]],
    [[1, 0, 3, 2]],
    [[32000, 32000, 32000, 31999]],
  ])('counts %j: every rank gets every slice in rank order', async (counts) => {
    const world = counts.length;
    const sab = createCollectiveBuffer({ world, slotFloats: Math.max(...counts) });
    const ops = [
      { kind: 'allGather' as const, counts, seed: 11 },
      { kind: 'allGather' as const, counts, seed: 12, zeroCopy: true },
      { kind: 'allGather' as const, counts, seed: 13 },
    ];
    const results = await pool.runAll(sab, world, ops);
    ops.forEach((op, k) => {
      const want = expected(counts, op.seed);
      for (let r = 0; r < world; r++) expect(firstBitDifference(results[r][k].data!, want), `op ${k} rank ${r}`).toBe(-1);
    });
  });

  it('rejects a counts array without one entry per rank, saying what it expected', async () => {
    const sab = createCollectiveBuffer({ world: 2, slotFloats: 16 });
    const bad = pool.run(1, { sab, rank: 1, ops: [{ kind: 'allGather', counts: [4, 4, 4], seed: 1 }] });
    await expect(bad).rejects.toThrow(InvalidArgumentError);
    await expect(bad).rejects.toThrow(/expected 2 counts/);
  });
});
