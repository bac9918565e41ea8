/**
 * Ranks in separate tabs: two pages of one browser context join a message-passing group as
 * rank 0 and rank 1 and all-reduce over BroadcastChannel links. Every page must hold the
 * documented sum bit for bit; a frozen or closed peer tab must give the typed errors of
 * src/collective/message-transport.ts within the timeout.
 */
import { test, expect } from './fixtures.js';
import type { Page } from '@playwright/test';
import type { Harness } from '../src/cli/browser.js';
import { TEST_PAGE } from '../test-support/test-page.js';
import type { SerializedError } from '../src/errors.js';

async function secondPage(h: Harness): Promise<Page> {
  const p = await h.browser.context.newPage();
  await p.goto(`${h.server.url}${TEST_PAGE}`);
  await p.waitForFunction(() => window.tpReady === true);
  return p;
}

let groups = 0;
const nextGroup = () => `e2e-tabs-${Date.now()}-${++groups}`;

test.describe.configure({ mode: 'serial' });

test('two tabs, one rank each: one-shot and ring all-reduce give the documented sum, the same bits in both', async ({ harness }) => {
  const other = await secondPage(harness);
  try {
    const group = nextGroup();
    const pages = [harness.page, other];
    await Promise.all(pages.map((p, rank) => p.evaluate(([g, r]) => window.tp.tabs.join(g, r, 2, { timeoutMs: 10_000 }), [group, rank] as const)));
    for (const algorithm of ['one-shot', 'ring'] as const) {
      const lens = [1, 100, 4097, 65_536, 1 << 20];
      const [a, b] = await Promise.all(pages.map((p) => p.evaluate(([g, l, al]) => window.tp.tabs.allReduce(g, l, 5, al), [group, lens, algorithm] as const)));
      expect('error' in a! ? a.error : null).toBeNull();
      expect('error' in b! ? b.error : null).toBeNull();
      const ra = a as Exclude<typeof a, { error: SerializedError }>;
      const rb = b as Exclude<typeof b, { error: SerializedError }>;
      for (const [i, x] of ra.entries()) {
        expect(x.algorithm).toBe(algorithm);
        expect(x.firstDifference, `${algorithm} ${x.len}`).toBe(-1);
        expect(rb[i]!.firstDifference).toBe(-1);
        expect(rb[i]!.hash).toBe(x.hash);
      }
    }
  } finally {
    await other.close();
  }
});

// A frozen tab runs no script. CDP Page.setWebLifecycleState {state: 'frozen'} is accepted by
// headless Chromium here but a visible page keeps running its timers (measured: its messages
// kept coming), so the freeze is made with the CDP debugger: Debugger.pause stops the page's
// script, heartbeats included, as a freeze does.
test('a frozen peer tab (script paused through CDP) fails the wait with CollectiveTimeoutError naming it', async ({ harness }) => {
  const other = await secondPage(harness);
  try {
    const group = nextGroup();
    await Promise.all([harness.page, other].map((p, rank) => p.evaluate(([g, r]) => window.tp.tabs.join(g, r, 2, { timeoutMs: 1500, heartbeatMs: 100 }), [group, rank] as const)));
    const cdp = await harness.browser.context.newCDPSession(other);
    await cdp.send('Page.setWebLifecycleState', { state: 'frozen' });
    await cdp.send('Debugger.enable');
    await cdp.send('Debugger.pause');
    const r = await harness.page.evaluate((g) => window.tp.tabs.allReduce(g, [1000], 1), group);
    expect('error' in r ? r.error.name : null).toBe('CollectiveTimeoutError');
    const e = (r as { error: SerializedError }).error;
    expect(e.code).toBe('COLLECTIVE_TIMEOUT');
    expect(e.extra?.missingRanks).toEqual([1]);
    expect(e.message).toContain('timed out after 1500 ms waiting for rank 1');
    await cdp.send('Debugger.resume');
    await cdp.send('Page.setWebLifecycleState', { state: 'active' });
    await harness.page.evaluate((g) => window.tp.tabs.leave(g), group);
  } finally {
    await other.close();
  }
});

test('closing the peer tab mid-collective fails the wait at once with WorkerFailedError naming it', async ({ harness }) => {
  const other = await secondPage(harness);
  const group = nextGroup();
  await Promise.all([harness.page, other].map((p, rank) => p.evaluate(([g, r]) => window.tp.tabs.join(g, r, 2, { timeoutMs: 60_000 }), [group, rank] as const)));
  const pending = harness.page.evaluate((g) => window.tp.tabs.allReduce(g, [1000], 1), group);
  await harness.page.waitForTimeout(200);
  await other.close({ runBeforeUnload: false });
  const r = await pending;
  // Well inside the 60 s timeout: the closing tab's goodbye (sent on pagehide) ends the wait.
  expect('error' in r ? r.error.name : null).toBe('WorkerFailedError');
  expect((r as { error: SerializedError }).error.extra?.rank).toBe(1);
  await harness.page.evaluate((g) => window.tp.tabs.leave(g), group);
});

test('bench allreduce --transport tab (smoke) reports cross-tab latency beside SAB', async () => {
  const { benchAllReduceTab } = await import('../src/cli/bench-allreduce.js');
  const r = await benchAllReduceTab({ workers: [2], sizes: [256, 8192], iters: 3 });
  expect(r.transport).toBe('tab');
  expect(r.results.map((x) => [x.workers, x.floats, x.tab_algorithm])).toEqual([[2, 256, 'one-shot'], [2, 8192, 'ring']]);
  for (const x of r.results) {
    expect(x.tab_median_us).toBeGreaterThan(0);
    expect(x.sab_median_us).toBeGreaterThan(0);
    expect(['one-shot', 'ring', 'direct']).toContain(x.sab_picked);
  }
});
