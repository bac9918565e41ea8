import { test, expect } from './fixtures.js';
import type { AllReduceCheck } from '../test-support/page/collective.js';

// The collectives in real dedicated Web Workers (Atomics.wait in workers, waitAsync on the page).
interface CollectivePage {
  tp: {
    collective: {
      checkAllReduce(o: { world: number; lens: number[] }): Promise<AllReduceCheck[]>;
      checkCollectives(world: number): Promise<{ allGather: boolean; broadcast: boolean; barriers: number }>;
      checkFailures(world: number, absent: number): Promise<{ timeouts: { code?: string; missingRanks?: number[] }[]; abort?: string }>;
    };
  };
}

for (const world of [2, 4]) {
  test(`all-reduce on ${world} Web Workers: every algorithm exact and identical on every rank`, async ({ harness }) => {
    const lens = [1, world - 1 || 1, 2048, 65537, 1 << 20];
    const checks = await harness.page.evaluate(
      (o) => (window as unknown as CollectivePage).tp.collective.checkAllReduce(o),
      { world, lens: [...new Set(lens)] },
    );
    expect(checks.length).toBe(new Set(lens).size * 6);
    for (const c of checks) {
      const label = `${c.algorithm}${c.zeroCopy ? ' zero-copy' : ''} len ${c.len}`;
      expect(c.exact, label).toBe(true);
      expect(c.sameOnAllRanks, label).toBe(true);
      // The group buffer is a WebAssembly.Memory, as in the engine: the SIMD sums ran.
      expect(c.simd, label).toBe(true);
      expect(new Set(c.picked).size, label).toBe(1);
      if (c.algorithm !== 'auto') expect(c.picked[0], label).toBe(c.algorithm);
    }
  });

  test(`all-gather (uneven), broadcast and barrier on ${world} Web Workers`, async ({ harness }) => {
    const r = await harness.page.evaluate((w) => (window as unknown as CollectivePage).tp.collective.checkCollectives(w), world);
    expect(r).toEqual({ allGather: true, broadcast: true, barriers: 200 });
  });
}

test('in the browser a missing rank is named by the timeout, and abort wakes a blocked rank', async ({ harness }) => {
  const r = await harness.page.evaluate(() => (window as unknown as CollectivePage).tp.collective.checkFailures(3, 1));
  expect(r.timeouts).toEqual([
    { code: 'COLLECTIVE_TIMEOUT', missingRanks: [1] },
    { code: 'COLLECTIVE_TIMEOUT', missingRanks: [1] },
  ]);
  expect(r.abort).toBe('ABORTED');
});
