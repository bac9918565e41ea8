import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCollectiveBuffer } from './layout.js';
import { RankPool } from '../../test-support/collective/pool.js';
import type { RankOp } from '../../test-support/collective/ops.js';
import { firstBitDifference, randomFloats, referenceSum } from '../../test-support/collective/data.js';

let pool: RankPool;
beforeAll(async () => {
  pool = await RankPool.create(4);
});
afterAll(() => pool?.close());

describe('barrier', () => {
  it('no rank leaves before the last one enters', async () => {
    const world = 4;
    const sab = createCollectiveBuffer({ world, slotFloats: 0 });
    const results = await Promise.all(
      Array.from({ length: world }, (_, r) => pool.run(r, { sab, rank: r, ops: [{ kind: 'barrier', delayMs: r === 2 ? 300 : 0 }] })),
    );
    const times = results.map((res) => JSON.parse(res[0].note!) as { enter: number; exit: number });
    const lastEnter = Math.max(...times.map((t) => t.enter));
    expect(lastEnter - times[0].enter).toBeGreaterThan(200);
    // timeOrigin differs slightly between threads; allow for that clock skew.
    for (const t of times) expect(t.exit).toBeGreaterThanOrEqual(lastEnter - 5);
  });

  it('1000 barriers back to back on 3 ranks, then the group still reduces correctly', async () => {
    const sab = createCollectiveBuffer({ world: 3, slotFloats: 64 });
    const ops: RankOp[] = Array.from({ length: 1000 }, () => ({ kind: 'barrier' }));
    ops.push({ kind: 'allReduce', len: 64, algorithm: 'direct', seed: 5 });
    const results = await pool.runAll(sab, 3, ops);
    expect(results.every((r) => r.length === 1001)).toBe(true);
    const want = referenceSum([0, 1, 2].map((r) => randomFloats(64, 5, r)));
    for (const r of results) expect(firstBitDifference(r[1000].data!, want)).toBe(-1);
  });

  it('returns at once with one rank', async () => {
    const sab = createCollectiveBuffer({ world: 1, slotFloats: 0 });
    const [res] = await pool.runAll(sab, 1, [{ kind: 'barrier' }]);
    expect(res).toHaveLength(1);
  });
});
