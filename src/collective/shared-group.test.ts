import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortedError, CollectiveTimeoutError, DisposedError } from '../errors.js';
import { createCollectiveBuffer } from './layout.js';
import { ControlBlock } from './control.js';
import { RankPool } from '../../test-support/collective/pool.js';
import { firstBitDifference, randomFloats, referenceSum } from '../../test-support/collective/data.js';
import type { AllReduceAlgorithm } from './all-reduce.js';
import { CPU_RANK_SPIN, DEFAULT_SPIN, defaultSpin } from './shared-group.js';
import type { RankOp } from '../../test-support/collective/ops.js';

let pool: RankPool;
beforeAll(async () => {
  pool = await RankPool.create(3);
});
afterAll(() => pool?.close());

const after = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a failed rank', () => {
  it.each<AllReduceAlgorithm>(['one-shot', 'direct'])(
    '%s: a rank terminated mid-collective makes the others time out naming it; after a reset the rebuilt group works',
    async (algorithm) => {
      const world = 3;
      const sab = createCollectiveBuffer({ world, slotFloats: 4096 });
      const ctrl = new ControlBlock(sab);
      const op: RankOp = { kind: 'allReduce', len: 4096, algorithm, seed: 9 };
      // One good round first, so the failure hits a group with history.
      await pool.runAll(sab, world, [op], { timeoutMs: 5000 });
      const t0 = performance.now();
      const survivors = [0, 1].map((r) => pool.run(r, { sab, rank: r, ops: [op], opts: { timeoutMs: 500 } }).catch((e: unknown) => e));
      const stuck = pool.run(2, { sab, rank: 2, ops: [{ kind: 'hang' }] }).catch(() => 'terminated');
      await after(100);
      await pool.terminate(2);
      expect(await stuck).toBe('terminated');
      for (const err of await Promise.all(survivors)) {
        expect(err).toBeInstanceOf(CollectiveTimeoutError);
        expect((err as CollectiveTimeoutError).missingRanks).toEqual([2]);
        expect((err as CollectiveTimeoutError).op).toBe('allReduce');
        expect((err as CollectiveTimeoutError).seq).toBe(2);
      }
      expect(performance.now() - t0).toBeLessThan(3000);

      // The engine's recovery: rebuild the rank, reset the group, carry on.
      await pool.respawn(2);
      ctrl.resetGroup();
      const results = await pool.runAll(sab, world, [op, { ...op, seed: 10 }], { timeoutMs: 5000 });
      for (const [k, seed] of [9, 10].entries()) {
        const want = referenceSum([0, 1, 2].map((r) => randomFloats(4096, seed, r)));
        for (const res of results) expect(firstBitDifference(res[k].data!, want)).toBe(-1);
      }
    },
  );

  it('a rank that never arrives at a barrier is named, and the others do not hang', async () => {
    const sab = createCollectiveBuffer({ world: 3, slotFloats: 0 });
    const errs = await Promise.all(
      [0, 2].map((r) => pool.run(r, { sab, rank: r, ops: [{ kind: 'barrier' }], opts: { timeoutMs: 200 } }).catch((e: unknown) => e)),
    );
    for (const e of errs) {
      expect(e).toBeInstanceOf(CollectiveTimeoutError);
      expect((e as CollectiveTimeoutError).missingRanks).toEqual([1]);
      expect((e as Error).message).toMatch(/barrier #1 on rank [02] timed out after 200 ms waiting for rank 1/);
    }
  });
});

describe('abort and dispose', () => {
  it('abort wakes a rank blocked in a collective, long before its timeout', async () => {
    const sab = createCollectiveBuffer({ world: 2, slotFloats: 1024 });
    const ctrl = new ControlBlock(sab);
    const t0 = performance.now();
    const waiting = pool.run(0, { sab, rank: 0, ops: [{ kind: 'allReduce', len: 1024, algorithm: 'direct', seed: 1 }], opts: { timeoutMs: 20_000 } });
    await after(150);
    ctrl.abort();
    await expect(waiting).rejects.toBeInstanceOf(AbortedError);
    expect(performance.now() - t0).toBeLessThan(2000);
    // Collectives refuse to start until the group is reset.
    await expect(pool.run(0, { sab, rank: 0, ops: [{ kind: 'barrier' }] })).rejects.toBeInstanceOf(AbortedError);
    ctrl.resetGroup();
    const results = await pool.runAll(sab, 2, [{ kind: 'allReduce', len: 1024, algorithm: 'one-shot', seed: 2 }]);
    const want = referenceSum([0, 1].map((r) => randomFloats(1024, 2, r)));
    for (const res of results) expect(firstBitDifference(res[0].data!, want)).toBe(-1);
  });

  it('dispose wakes a rank blocked in a collective with DisposedError', async () => {
    const sab = createCollectiveBuffer({ world: 2, slotFloats: 16 });
    const ctrl = new ControlBlock(sab);
    const waiting = pool.run(1, { sab, rank: 1, ops: [{ kind: 'barrier' }], opts: { timeoutMs: 20_000 } });
    await after(150);
    ctrl.dispose();
    await expect(waiting).rejects.toBeInstanceOf(DisposedError);
  });
});

describe('defaultSpin', () => {
  it('spins long only for CPU ranks that each have a core', () => {
    expect(CPU_RANK_SPIN).toBeGreaterThan(DEFAULT_SPIN);
    expect(defaultSpin(true, 2, 2)).toBe(CPU_RANK_SPIN);
    expect(defaultSpin(true, 4, 2)).toBe(DEFAULT_SPIN);
    expect(defaultSpin(false, 2, 8)).toBe(DEFAULT_SPIN);
  });
});
