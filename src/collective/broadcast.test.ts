import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCollectiveBuffer } from './layout.js';
import { RankPool } from '../../test-support/collective/pool.js';
import { firstBitDifference, randomFloats } from '../../test-support/collective/data.js';
import type { RankOp } from '../../test-support/collective/ops.js';

let pool: RankPool;
beforeAll(async () => {
  pool = await RankPool.create(4);
});
afterAll(() => pool?.close());

describe('broadcast', () => {
  it.each([1, 2, 3, 4])('over %i ranks: every rank ends with the root’s buffer, from every root', async (world) => {
    const sab = createCollectiveBuffer({ world, slotFloats: 5000 });
    const ops: RankOp[] = [];
    for (let root = 0; root < world; root++) for (const len of [1, 33, 5000]) ops.push({ kind: 'broadcast', len, root, seed: root * 10 + len });
    const results = await pool.runAll(sab, world, ops);
    ops.forEach((op, k) => {
      if (op.kind !== 'broadcast') return;
      const want = randomFloats(op.len, op.seed, op.root);
      for (let r = 0; r < world; r++) expect(firstBitDifference(results[r][k].data!, want), `op ${k} rank ${r}`).toBe(-1);
    });
  });
});
