import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AbortedError, CollectiveTimeoutError, DisposedError, InvalidArgumentError } from '../errors.js';
import { DONE_SEQ, createCollectiveBuffer } from './layout.js';
import { ControlBlock } from './control.js';
import { STATUS_FAILED, STATUS_OK, STATUS_PARKED } from '../protocol.js';
import { RankPool } from '../../test-support/collective/pool.js';

let pool: RankPool;
beforeAll(async () => {
  pool = await RankPool.create(3);
});
afterAll(() => pool?.close());

const after = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('control block', () => {
  it('posts steps, workers wake with the words, the main thread awaits every rank done', async () => {
    const sab = createCollectiveBuffer({ world: 3, slotFloats: 0 });
    const ctrl = new ControlBlock(sab);
    const served = pool.runAll(sab, 3, [{ kind: 'steps', steps: 3, lastSeq: 0 }]);
    for (let k = 1; k <= 3; k++) {
      const words = new Int32Array(64);
      words[0] = k;
      const seq = ctrl.postStep(words);
      expect(seq).toBe(k);
      await ctrl.waitAllDone(seq, 5000);
      expect([0, 1, 2].map((r) => ctrl.reply(r)[0])).toEqual([k * 10, k * 10 + 1, k * 10 + 2]);
      expect(ctrl.status(1)).toBe(0);
    }
    expect((await served).map((r) => r[0].note)).toEqual(['3', '3', '3']);
  });

  it('times out naming the rank that did not finish the step', async () => {
    const sab = createCollectiveBuffer({ world: 3, slotFloats: 0 });
    const ctrl = new ControlBlock(sab);
    const served = Promise.all([0, 1].map((r) => pool.run(r, { sab, rank: r, ops: [{ kind: 'steps', steps: 1, lastSeq: 0 }] })));
    const seq = ctrl.postStep([7]);
    const t0 = performance.now();
    const err = await ctrl.waitAllDone(seq, 300).catch((e: unknown) => e);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(err).toBeInstanceOf(CollectiveTimeoutError);
    expect((err as CollectiveTimeoutError).missingRanks).toEqual([2]);
    expect((err as CollectiveTimeoutError).seq).toBe(seq);
    expect((err as Error).message).toMatch(/step #1 timed out after 300 ms waiting for rank 2/);
    await served;
  });

  it('wakes a worker waiting for a step on abort, then on reset lets it resume', async () => {
    const sab = createCollectiveBuffer({ world: 1, slotFloats: 0 });
    const ctrl = new ControlBlock(sab);
    const waiting = pool.run(0, { sab, rank: 0, ops: [{ kind: 'waitStep', lastSeq: 0 }] });
    await after(100);
    ctrl.abort();
    await expect(waiting).rejects.toBeInstanceOf(AbortedError);
    expect(ctrl.resetGroup()).toBe(1);
    expect(ctrl.aborted).toBe(false);
    const next = pool.run(0, { sab, rank: 0, ops: [{ kind: 'steps', steps: 1, lastSeq: 0 }] });
    await ctrl.waitAllDone(ctrl.postStep([1]), 5000);
    await next;
  });

  it('wakes a waiting worker and the main thread on dispose', async () => {
    const sab = createCollectiveBuffer({ world: 2, slotFloats: 0 });
    const ctrl = new ControlBlock(sab);
    const waiting = pool.run(0, { sab, rank: 0, ops: [{ kind: 'waitStep', lastSeq: 0 }] });
    const mainWait = ctrl.waitAllDone(1, 10_000).catch((e: unknown) => e);
    await after(100);
    ctrl.dispose();
    await expect(waiting).rejects.toBeInstanceOf(DisposedError);
    expect(await mainWait).toBeInstanceOf(DisposedError);
    expect(() => ctrl.postStep([1])).toThrow(DisposedError);
  });

  it('resolves null when no step comes within the timeout, and rejects oversized commands', async () => {
    const sab = createCollectiveBuffer({ world: 1, slotFloats: 0, commandWords: 64 });
    const [res] = await pool.run(0, { sab, rank: 0, ops: [{ kind: 'waitStep', lastSeq: 0, timeoutMs: 50 }] });
    expect(res.note).toBe('timeout');
    expect(() => new ControlBlock(sab).postStep(new Int32Array(65))).toThrow(InvalidArgumentError);
  });
});

describe('control block: failing fast and parking after an abort', () => {
  it('waitStep returns failed as soon as one rank reports a failure, while another never answers', async () => {
    const ctrl = new ControlBlock(createCollectiveBuffer({ world: 3, slotFloats: 0 }));
    const seq = ctrl.postStep([1]);
    ctrl.signalDone(0, seq, STATUS_OK);
    setTimeout(() => ctrl.signalDone(2, seq, STATUS_FAILED), 30);
    const t0 = performance.now();
    expect(await ctrl.waitStep(seq, 10_000)).toBe('failed');
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('waitStep sees a rank that finishes between its check and its wait (one rank: no poll would rescue it)', async () => {
    const ctrl = new ControlBlock(createCollectiveBuffer({ world: 1, slotFloats: 0 }));
    const seq = ctrl.postStep([1]);
    // The rank signals right after waitStep's first read of its done word, as a real rank can.
    const load = Atomics.load;
    const doneWord = (ctrl as unknown as { doneIndex(r: number): number }).doneIndex(0) + DONE_SEQ;
    let signalled = false;
    const spy = vi.spyOn(Atomics, 'load').mockImplementation(((ta: Int32Array, i: number) => {
      const v = load(ta, i);
      if (i === doneWord && !signalled) {
        signalled = true;
        ctrl.signalDone(0, seq, STATUS_OK);
      }
      return v;
    }) as typeof Atomics.load);
    try {
      // With the wait on a fresh read it would sleep for the whole minute and fail the test's 10 s limit.
      expect(await ctrl.waitStep(seq, 60_000)).toBe('done');
    } finally {
      spy.mockRestore();
    }
  }, 10_000);

  it('waitStep returns done when every rank succeeded and timeout when one is missing', async () => {
    const ctrl = new ControlBlock(createCollectiveBuffer({ world: 2, slotFloats: 0 }));
    const seq = ctrl.postStep([1]);
    ctrl.signalDone(0, seq, STATUS_OK);
    expect(await ctrl.waitStep(seq, 100)).toBe('timeout');
    ctrl.signalDone(1, seq, STATUS_OK);
    expect(await ctrl.waitStep(seq, 100)).toBe('done');
  });

  it('waitStep sleeps once for a step whose ranks finish one after another: only the last rank wakes it', async () => {
    const ctrl = new ControlBlock(createCollectiveBuffer({ world: 3, slotFloats: 0 }));
    const seq = ctrl.postStep([1]);
    const waitAsync = (Atomics as unknown as { waitAsync: (...a: unknown[]) => { async: boolean } }).waitAsync;
    let sleeps = 0;
    const spy = vi.spyOn(Atomics as unknown as { waitAsync: typeof waitAsync }, 'waitAsync').mockImplementation((...a: unknown[]) => {
      const r = waitAsync(...a);
      if (r.async) sleeps++;
      return r;
    });
    try {
      for (const [r, ms] of [[0, 1], [1, 3], [2, 6]] as const) setTimeout(() => ctrl.signalDone(r, seq, STATUS_OK), ms);
      expect(await ctrl.waitStep(seq, 10_000)).toBe('done');
      // Woken by rank 0 and rank 1 as well, it would sleep three times; the bound leaves room for
      // one 20 ms poll on a slow machine.
      expect(sleeps).toBeLessThan(3);
    } finally {
      spy.mockRestore();
    }
  });

  it('waitParked names the ranks that did not park; a park for an older step does not count', async () => {
    const ctrl = new ControlBlock(createCollectiveBuffer({ world: 3, slotFloats: 0 }));
    ctrl.park(2); // parked at step 0, before the step below
    const seq = ctrl.postStep([1]);
    ctrl.abort();
    setTimeout(() => ctrl.park(0), 20);
    expect(await ctrl.waitParked([0, 1, 2], seq, 300)).toEqual([1, 2]);
    ctrl.park(2);
    expect(await ctrl.waitParked([0, 2], seq, 300)).toEqual([]);
    expect(ctrl.status(0)).toBe(STATUS_PARKED);
  });
});
