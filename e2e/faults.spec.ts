/**
 * Faults and cancellation in real Chromium on stories260K (TP=2, and TP=1): a rank's worker terminated
 * or its device destroyed mid-generation, an abort during prefill or decode, dispose during
 * generation. Each ends in a typed error for the requests in flight and a recovery that the next
 * requests prove (llama2.c's reference tokens); workers, devices and buffers are counted by
 * wrapping Worker and WebGPU in an init script (e2e/counting.ts), not taken from stats().
 */
import { expect, withInitScript } from './fixtures.js';
import { readFileSync } from 'node:fs';
import type { Harness } from '../src/cli/browser.js';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import type { PageOutcome } from '../test-support/page/engine.js';
import { COUNTING_INIT, counts } from './counting.js';

const greedy = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[] };
const story = greedy.tokens.slice(1);

const test = withInitScript(COUNTING_INIT);
test.describe.configure({ mode: 'serial' });

const story260K: PageGenerateOptions = {
  model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 2, maxBatch: 2,
  prompt: '', maxTokens: 40, temperature: 0, topP: 0.9, seed: 1,
};
const modelRequests = (h: Harness) => h.server.log.filter((r) => r.path === '/models/stories260K.bin').length;

type ErrorOutcome = PageOutcome & { error: { name: string; code?: string; message: string; extra?: { rank?: number; missingRanks?: number[]; remedy?: string } } };

function expectRankError(out: PageOutcome, name: string, code: string, rank: number): void {
  expect('error' in out).toBe(true);
  const e = (out as ErrorOutcome).error;
  expect(e.name).toBe(name);
  expect(e.code).toBe(code);
  expect(e.extra?.rank ?? e.extra?.missingRanks).toEqual(e.extra?.rank === undefined ? [rank] : rank);
  expect(e.message).toMatch(new RegExp(`rank ${rank}`, 'i'));
  expect(e.extra?.remedy).toBeTruthy();
  // What streamed before the fault was correct.
  expect(out.tokens).toEqual(story.slice(0, out.tokens.length));
}

for (const fault of [
  { kind: 'terminate-worker' as const, tp: 2, rank: 1, name: 'WorkerFailedError', code: 'WORKER_FAILED', timeoutMs: undefined },
  { kind: 'destroy-device' as const, tp: 2, rank: 0, name: 'DeviceLostError', code: 'DEVICE_LOST', timeoutMs: undefined },
  // A silent crash (as an out-of-memory kill): only timeouts reveal it, so they are short here.
  { kind: 'crash-worker' as const, tp: 2, rank: 1, name: 'CollectiveTimeoutError', code: 'COLLECTIVE_TIMEOUT', timeoutMs: 2500 },
  // The single-rank shortcut: no collective, no survivor to release.
  { kind: 'terminate-worker' as const, tp: 1, rank: 0, name: 'WorkerFailedError', code: 'WORKER_FAILED', timeoutMs: undefined },
  // Without the shard cache the rebuilt rank's shard is streamed from the model again.
  { kind: 'terminate-worker' as const, tp: 2, rank: 0, name: 'WorkerFailedError', code: 'WORKER_FAILED', timeoutMs: undefined, cache: false },
]) {
  const from = fault.cache === false ? 'the model (no cache)' : 'the shard cache';
  test(`${fault.kind} on rank ${fault.rank} of ${fault.tp} mid-generation: the batch fails naming the rank, the rank is rebuilt from ${from}, queued and next requests are correct`, async ({ counted: h }) => {
    const o = { ...story260K, tp: fault.tp, timeoutMs: fault.timeoutMs, cache: fault.cache };
    const load = await h.page.evaluate((x) => window.tp.engine.load(x), o);
    expect('error' in load ? load.error : null).toBeNull();
    const before = await counts(h.page);
    expect(before.workersAlive).toBe(fault.tp);
    const downloads = modelRequests(h);

    // Two requests decode together (maxBatch 2); the third waits in the queue.
    const requests = [{ prompt: '', maxTokens: 32 }, { prompt: '', maxTokens: 32 }, { prompt: '', maxTokens: 16 }];
    const outs = await h.page.evaluate(([x, r, f]) => window.tp.engine.generateWithFault(x, r, f, 5), [o, requests, { kind: fault.kind, rank: fault.rank }] as const);
    if ('error' in outs) throw new Error(outs.error.message);
    expectRankError(outs[0]!, fault.name, fault.code, fault.rank);
    expectRankError(outs[1]!, fault.name, fault.code, fault.rank);
    expect(outs[2]).toEqual({ tokens: story.slice(0, 16) });

    // The next request on the same engine (as many tokens as the queued one: every step runs on the rebuilt rank).
    const next = await runGenerate(h, { ...o, maxTokens: 16 });
    expect(next.tokens).toEqual(story.slice(0, 16));

    // One worker replaced, its shard read from IndexedDB (with the cache): not one more request for the model.
    if (fault.cache === false) expect(modelRequests(h)).toBeGreaterThan(downloads);
    else expect(modelRequests(h)).toBe(downloads);
    const after = await counts(h.page);
    expect(after.workersMade).toBe(before.workersMade + 1);
    expect(after.workersAlive).toBe(fault.tp);
    expect(after.devicesAlive).toBe(fault.tp);
    expect(after.buffersAlive).toBe(before.buffersAlive);
    // The engine stays loaded: the next fault test with the same options starts from it.
  });
}

const longPrompt = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her big red ball and her friend Ben. ';

test('abort during prefill and during decode: typed AbortedError, the slot and buffers are freed, the next request is correct', async ({ counted: h }) => {
  // One slot and 8-row prefill chunks: a prompt of ~70 tokens takes several steps, and a slot
  // the abort failed to free would leave the next request waiting for ever.
  const x = { ...story260K, maxBatch: 1, maxRows: 8 };
  const load = await h.page.evaluate((y) => window.tp.engine.load(y), x);
  expect('error' in load ? load.error : null).toBeNull();
  const before = await counts(h.page);

  const inPrefill = await h.page.evaluate(([y, p]) => window.tp.engine.cancelDuring(y, p, 'abort', 0), [x, longPrompt.repeat(2)] as const);
  if (!('tokens' in inPrefill)) throw new Error(inPrefill.error.message);
  expect(inPrefill.tokens).toEqual([]);
  expect('error' in inPrefill && inPrefill.error.code).toBe('ABORTED');
  expect((await runGenerate(h, { ...x, maxTokens: 30 })).tokens).toEqual(story.slice(0, 30));

  const inDecode = await h.page.evaluate((y) => window.tp.engine.cancelDuring(y, '', 'abort', 5), x);
  if (!('tokens' in inDecode)) throw new Error(inDecode.error.message);
  expect(inDecode.tokens).toEqual(story.slice(0, 5));
  expect('error' in inDecode && inDecode.error.name).toBe('AbortedError');
  expect((await runGenerate(h, { ...x, maxTokens: 30 })).tokens).toEqual(story.slice(0, 30));

  const after = await counts(h.page);
  expect(after.workersMade).toBe(before.workersMade);
  expect(after.workersAlive).toBe(2);
  expect(after.buffersAlive).toBe(before.buffersAlive);
  await h.page.evaluate(() => window.tp.engine.disposeAll());
});

test('dispose during generation: DisposedError, then every worker terminated and every device and buffer destroyed', async ({ counted: h }) => {
  const since = (await counts(h.page)).workersMade;
  const load = await h.page.evaluate((y) => window.tp.engine.load(y), story260K);
  expect('error' in load ? load.error : null).toBeNull();
  const loaded = await counts(h.page, since);
  expect(loaded).toMatchObject({ workersMade: 2, workersAlive: 2, devicesAlive: 2 });
  expect(loaded.buffersAlive).toBeGreaterThan(0);

  const out = await h.page.evaluate((y) => window.tp.engine.cancelDuring(y, '', 'dispose', 5), { ...story260K, maxTokens: 200 });
  if (!('tokens' in out)) throw new Error(out.error.message);
  expect(out.tokens).toEqual(story.slice(0, 5));
  expect('error' in out && out.error.code).toBe('DISPOSED');

  // Destroyed by the engine itself before it terminated the workers, not merely dropped with them.
  expect(await counts(h.page, since)).toEqual({ workersMade: 2, workersAlive: 0, devicesAlive: 0, buffersAlive: 0, devicesNeverDestroyed: 0, buffersNeverFreed: 0 });
});
