/**
 * Ranks in other tabs inside the engine: the harness page creates an engine with `tabs`, and a
 * second page, the demo opened at `?join=<id>`, runs the tab rank in a worker of its own (its
 * own device; it fetches its slices from the model URL itself). Greedy stories260K must give
 * llama2.c's tokens, with one tab rank alone and mixed with local worker ranks; closing the rank
 * tab mid-run must fail the request with a typed error naming it (no hang), and the engine must
 * then say it has to be created again.
 */
import { readFileSync } from 'node:fs';
import type { Page } from '@playwright/test';
import { test, expect } from './fixtures.js';
import type { Harness } from '../src/cli/browser.js';
import type { PageGenerateOptions, PageGenerateResult } from '../src/cli/page/types.js';
import type { SerializedError } from '../src/errors.js';

const greedy = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[] };

const base: PageGenerateOptions = {
  model: '/models/stories260K.bin',
  tokenizer: '/models/tok512.bin',
  tp: 2,
  prompt: '',
  maxTokens: 256,
  temperature: 0,
  topP: 0.9,
  seed: 1,
  // The tab rank loads through the same shard cache; off, so each test really fetches.
  cache: false,
};

let ids = 0;
const nextId = () => `e2e-${Date.now()}-${++ids}`;

/** The demo at ?join=<id>: it offers its device to the host waiting on `id`. */
async function joinPage(h: Harness, id: string): Promise<Page> {
  const p = await h.browser.context.newPage();
  await p.goto(`${h.server.url}/?join=${encodeURIComponent(id)}`);
  await expect(p.locator('#join-card')).toBeVisible();
  // Only the rank's card: no Generate UI that would load an engine of its own beside it.
  await expect(p.locator('#generate')).toBeHidden();
  return p;
}

type Generated = PageGenerateResult | { error: SerializedError };
const generate = (h: Harness, o: PageGenerateOptions) => h.page.evaluate((opts) => window.tp.engine.generate(opts), o) as Promise<Generated>;

test.describe.configure({ mode: 'serial' });

test.afterEach(async ({ harness }) => {
  await harness.page.evaluate(() => window.tp.engine.disposeAll());
});

// 64 tokens here and in the mixed-ranks test below: the whole sample through a tab rank is
// e2e/cpu-tabs.spec.ts's (a CPU rank in the tab), and on GPU ranks e2e/engine.spec.ts's.
test('TP=2 with rank 1 in a joined demo tab: greedy stories260K is the reference, and the tab shows its rank running', async ({ harness }) => {
  const id = nextId();
  const join = await joinPage(harness, id);
  try {
    await expect(join.locator('#join-state')).toHaveText('Waiting for the host');
    const r = await generate(harness, { ...base, maxTokens: 32, tabs: { id, count: 1 } });
    expect('error' in r ? r.error : null).toBeNull();
    const ok = r as PageGenerateResult;
    expect(ok.tp).toBe(2);
    expect(ok.tokens).toEqual(greedy.tokens.slice(1, 33));
    expect(ok.stats.placement?.ranks.map((x) => x.spec)).toEqual(['default', `tab "${id}"`]);
    // Rank 1 ran in the join page's worker: its own adapter, its own steps.
    expect(ok.stats.ranks[1]!.steps).toBeGreaterThan(0);
    await expect(join.locator('#join-state')).toHaveText('Running · rank 1 of 2');
    expect(await join.evaluate(() => document.body.dataset.join)).toBe('running');
    // Disposing the engine tells the tab.
    await harness.page.evaluate(() => window.tp.engine.disposeAll());
    await expect(join.locator('#join-state')).toHaveText('Host gone');
  } finally {
    await join.close();
  }
});

// W8A8 at TP > 1 chains the row-parallel sums rank to rank (runqExact); over messages each
// hand-off is an all-reduce in which the other ranks add −0, which must carry the floats exactly.
test('stories260K-q8 W8A8 at TP=2 with rank 1 in a tab: runq.c\'s 200 greedy tokens (chained sums over messages)', async ({ harness }) => {
  const q8 = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-q8-greedy.json', import.meta.url), 'utf8')) as { tokens: number[] };
  const id = nextId();
  const join = await joinPage(harness, id);
  try {
    const r = await generate(harness, { ...base, model: '/models/stories260K-q8.bin', maxTokens: 200, tabs: { id, count: 1 } });
    expect('error' in r ? r.error : null).toBeNull();
    expect((r as PageGenerateResult).tokens).toEqual(q8.tokens.slice(1, 201));
  } finally {
    await join.close();
  }
});

// The model is a Blob here, as a picked File would be: the host posts it to the tab rank.
test('mixed ranks: 2 local workers and 1 tab rank (heads 3/3/2), model from a Blob, give the reference tokens', async ({ harness }) => {
  const id = nextId();
  const join = await joinPage(harness, id);
  try {
    const r = await generate(harness, { ...base, tp: 3, split: [3, 3, 2], modelAsBlob: true, maxTokens: 32, tabs: { id, count: 1 } });
    expect('error' in r ? r.error : null).toBeNull();
    const ok = r as PageGenerateResult;
    expect(ok.tokens).toEqual(greedy.tokens.slice(1, 33));
    expect(ok.stats.placement?.ranks.map((x) => [x.spec, x.heads])).toEqual([['default', [0, 3]], ['default', [3, 6]], [`tab "${id}"`, [6, 8]]]);
    await expect(join.locator('#join-state')).toHaveText('Running · rank 2 of 3');
  } finally {
    await join.close();
  }
});

test('closing the rank tab mid-run fails the request with WorkerFailedError naming it, and the engine then says to recreate it', async ({ harness }) => {
  const id = nextId();
  const join = await joinPage(harness, id);
  await harness.page.evaluate(() => {
    (window as unknown as { tpTokens: number }).tpTokens = 0;
    window.tpEmit = () => void (window as unknown as { tpTokens: number }).tpTokens++;
  });
  // A long timeout: only the tab's goodbye can end the request quickly. The request runs to
  // the end of the context, so the tab closes while it is still decoding.
  const o = { ...base, stream: true, maxTokens: 510, ignoreEos: true, timeoutMs: 120_000, tabs: { id, count: 1 } };
  const pending = generate(harness, o);
  await harness.page.waitForFunction(() => (window as unknown as { tpTokens: number }).tpTokens >= 4, undefined, { timeout: 60_000 });
  await join.close({ runBeforeUnload: false });
  const r = await pending;
  const emitted = await harness.page.evaluate(() => (window as unknown as { tpTokens: number }).tpTokens);
  expect(emitted).toBeLessThan(510);
  expect('error' in r ? r.error.name : null).toBe('WorkerFailedError');
  const e = (r as { error: SerializedError }).error;
  expect(e.code).toBe('WORKER_FAILED');
  expect(e.extra?.rank).toBe(1);
  expect(e.message).toContain('its tab was closed');
  expect(e.extra?.remedy).toContain('create a new one');
  // The same engine (same options) now fails at once, saying why.
  const again = await generate(harness, o);
  expect('error' in again ? again.error.code : null).toBe('WORKER_FAILED');
  expect((again as { error: SerializedError }).error.message).toContain('ranks in other tabs are not rebuilt');
});

// A frozen tab runs no script: CDP Page.setWebLifecycleState alone leaves a visible headless
// page running (see tabs.spec.ts), so the page's script is also paused with the debugger. Its
// heartbeats stop, and within the engine's timeout the request fails naming the rank.
test('a frozen rank tab fails the request with CollectiveTimeoutError naming it within the timeout', async ({ harness }) => {
  const id = nextId();
  const join = await joinPage(harness, id);
  try {
    await harness.page.evaluate(() => {
      (window as unknown as { tpTokens: number }).tpTokens = 0;
      window.tpEmit = () => void (window as unknown as { tpTokens: number }).tpTokens++;
    });
    const o = { ...base, stream: true, maxTokens: 510, ignoreEos: true, timeoutMs: 3000, tabs: { id, count: 1 } };
    const pending = generate(harness, o);
    await harness.page.waitForFunction(() => (window as unknown as { tpTokens: number }).tpTokens >= 4, undefined, { timeout: 60_000 });
    const cdp = await harness.browser.context.newCDPSession(join);
    await cdp.send('Page.setWebLifecycleState', { state: 'frozen' });
    await cdp.send('Debugger.enable');
    await cdp.send('Debugger.pause');
    const r = await pending;
    expect('error' in r ? r.error.name : null).toBe('CollectiveTimeoutError');
    const e = (r as { error: SerializedError }).error;
    expect(e.code).toBe('COLLECTIVE_TIMEOUT');
    expect(e.extra?.missingRanks).toEqual([1]);
    expect(e.message).toContain('timed out after 3000 ms waiting for rank 1');
    await cdp.send('Debugger.resume');
    await cdp.send('Page.setWebLifecycleState', { state: 'active' });
  } finally {
    await join.close();
  }
});

test('no tab joins: createEngine throws TabJoinTimeoutError with the join URL as remedy', async ({ harness }) => {
  const id = nextId();
  const r = await generate(harness, { ...base, tabs: { id, count: 1, timeoutMs: 1500 } });
  expect('error' in r ? r.error.name : null).toBe('TabJoinTimeoutError');
  const e = (r as { error: SerializedError }).error;
  expect(e.code).toBe('TAB_JOIN_TIMEOUT');
  expect(e.message).toContain(`0 of 1 rank tab joined "${id}"`);
  expect(e.extra?.remedy).toContain(`?join=${id}`);
});

test('tabs options that cannot work are InvalidArgumentError before any tab is waited for', async ({ harness }) => {
  const tooMany = await generate(harness, { ...base, tabs: { id: nextId(), count: 3 } });
  expect('error' in tooMany ? tooMany.error.code : null).toBe('INVALID_ARGUMENT');
  expect((tooMany as { error: SerializedError }).error.message).toContain('tabs.count must be a whole number in 1..2');
  const auto = await generate(harness, { ...base, tp: 0, devices: 'auto', tabs: { id: nextId(), count: 1 } });
  expect('error' in auto ? auto.error.code : null).toBe('INVALID_ARGUMENT');
  expect((auto as { error: SerializedError }).error.message).toContain('devices: "auto"');
});
