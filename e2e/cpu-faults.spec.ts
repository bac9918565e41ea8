/**
 * Faults on CPU ranks (issue 22), as e2e/faults.spec.ts checks them on GPU ranks: a CPU rank's
 * worker terminated mid-generation (announced, or silently as an out-of-memory kill would) must
 * fail the batch in flight with a typed error naming the rank, the rank must be rebuilt (from the
 * shard cache: no second request for the model), and the queued and next requests must get
 * llama2.c's tokens. A CPU rank has no device to lose, so that fault is refused, typed. Workers
 * are counted by wrapping Worker in an init script (e2e/counting.ts), not taken from stats().
 */
import { expect, withInitScript } from './fixtures.js';
import type { Harness } from '../src/cli/browser.js';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import type { PageOutcome } from '../test-support/page/engine.js';
import type { DevicesOption } from '../src/engine/placement.js';
import type { SerializedError } from '../src/errors.js';
import { COUNTING_INIT, counts } from './counting.js';
import { greedy } from './greedy.js';

const story = greedy.tokens.slice(1);

const test = withInitScript(COUNTING_INIT);
test.describe.configure({ mode: 'serial' });

const cpu: PageGenerateOptions = {
  model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 2, devices: 'cpu', maxBatch: 2,
  prompt: '', maxTokens: 40, temperature: 0, topP: 0.9, seed: 1,
};
const modelRequests = (h: Harness) => h.server.log.filter((r) => r.path === '/models/stories260K.bin').length;

type RankErrorExtra = { rank?: number; missingRanks?: number[]; remedy?: string };

/** The request failed with `name`/`code`, naming rank `rank` (in `rank` or `missingRanks`), with a remedy, after correct tokens. */
function expectNamesRank(out: PageOutcome, want: { name: string; code: string; rank: number }): void {
  const error = 'error' in out ? (out.error as SerializedError & { extra?: RankErrorExtra }) : undefined;
  expect(error, `tokens ${out.tokens.length}, no error`).toBeDefined();
  expect([error!.name, error!.code]).toEqual([want.name, want.code]);
  const named = error!.extra?.rank !== undefined ? [error!.extra.rank] : error!.extra?.missingRanks;
  expect(named).toEqual([want.rank]);
  expect(error!.message).toMatch(new RegExp(`rank ${want.rank}\\b`, 'i'));
  expect(error!.extra?.remedy).toBeTruthy();
  expect(out.tokens).toEqual(story.slice(0, out.tokens.length));
}

const faults: {
  kind: 'terminate-worker' | 'crash-worker'; tp: number; rank: number; name: string; code: string;
  devices?: DevicesOption; timeoutMs?: number; cache?: boolean; gpuRanks?: number;
}[] = [
  { kind: 'terminate-worker', tp: 2, rank: 1, name: 'WorkerFailedError', code: 'WORKER_FAILED' },
  // A silent crash: only the collective and step timeouts find it, so they are short here.
  { kind: 'crash-worker', tp: 2, rank: 0, name: 'CollectiveTimeoutError', code: 'COLLECTIVE_TIMEOUT', timeoutMs: 2000 },
  // The single-rank shortcut: no collective, no survivor to release.
  { kind: 'terminate-worker', tp: 1, rank: 0, name: 'WorkerFailedError', code: 'WORKER_FAILED' },
  // Without the shard cache the rebuilt rank's shard is streamed from the model again.
  { kind: 'terminate-worker', tp: 2, rank: 0, name: 'WorkerFailedError', code: 'WORKER_FAILED', cache: false },
  // The CPU rank of a mixed engine: the SwiftShader rank survives, parked, and steps on with the new one.
  { kind: 'terminate-worker', tp: 0, rank: 1, name: 'WorkerFailedError', code: 'WORKER_FAILED', devices: [{ forceFallbackAdapter: true }, { cpu: true }], gpuRanks: 1 },
];

for (const f of faults) {
  const world = f.devices && Array.isArray(f.devices) ? f.devices.length : f.tp;
  const where = f.gpuRanks ? `the CPU rank ${f.rank} beside a SwiftShader rank` : `CPU rank ${f.rank} of ${world}`;
  const from = f.cache === false ? 'the model (no cache)' : 'the shard cache';
  test(`${f.kind} on ${where} mid-generation: the batch fails naming the rank, the rank is rebuilt from ${from}, queued and next requests are correct`, async ({ counted: h }) => {
    const o = { ...cpu, tp: f.tp, devices: f.devices ?? cpu.devices, timeoutMs: f.timeoutMs, cache: f.cache };
    const load = await h.page.evaluate((x) => window.tp.engine.load(x), o);
    expect('error' in load ? load.error : null).toBeNull();
    const before = await counts(h.page);
    expect(before.workersAlive).toBe(world);
    const downloads = modelRequests(h);

    // Two requests decode together (maxBatch 2); the third waits in the queue.
    const requests = [{ prompt: '', maxTokens: 32 }, { prompt: '', maxTokens: 32 }, { prompt: '', maxTokens: 16 }];
    const outs = await h.page.evaluate(([x, r, k]) => window.tp.engine.generateWithFault(x, r, k, 5), [o, requests, { kind: f.kind, rank: f.rank }] as const);
    if ('error' in outs) throw new Error(outs.error.message);
    for (const out of outs.slice(0, 2)) expectNamesRank(out, f);
    expect(outs[2]).toEqual({ tokens: story.slice(0, 16) });

    const next = await runGenerate(h, { ...o, maxTokens: 32 });
    expect(next.tokens).toEqual(story.slice(0, 32));
    expect(next.stats.ranks.map((r) => r.adapter)).toEqual(f.gpuRanks ? ['swiftshader', 'CPU (WebAssembly SIMD)'] : Array.from({ length: world }, () => 'CPU (WebAssembly SIMD)'));

    if (f.cache === false) expect(modelRequests(h)).toBeGreaterThan(downloads);
    else expect(modelRequests(h)).toBe(downloads);
    const after = await counts(h.page);
    expect(after.workersMade).toBe(before.workersMade + 1);
    expect(after.workersAlive).toBe(world);
    // Only the SwiftShader rank has a GPU device, and it kept its one.
    expect(after.devicesAlive).toBe(f.gpuRanks ?? 0);
    expect(after.buffersAlive).toBe(before.buffersAlive);
  });
}

test('destroying a CPU rank\'s device is refused with InvalidArgumentError, and the requests in flight finish correctly', async ({ counted: h }) => {
  const load = await h.page.evaluate((x) => window.tp.engine.load(x), cpu);
  expect('error' in load ? load.error : null).toBeNull();
  const before = await counts(h.page);
  const requests = [{ prompt: '', maxTokens: 24 }];
  const outs = await h.page.evaluate(([x, r]) => window.tp.engine.generateWithFault(x, r, { kind: 'destroy-device', rank: 1 }, 5), [cpu, requests] as const);
  expect('error' in outs && outs.error.name).toBe('InvalidArgumentError');
  expect('error' in outs && outs.error.message).toContain('no device');
  expect((await runGenerate(h, { ...cpu, maxTokens: 24 })).tokens).toEqual(story.slice(0, 24));
  expect((await counts(h.page)).workersMade).toBe(before.workersMade);
});

test('dispose during generation on CPU ranks: DisposedError, then every worker terminated', async ({ counted: h }) => {
  await h.page.evaluate(() => window.tp.engine.disposeAll());
  const since = (await counts(h.page)).workersMade;
  const load = await h.page.evaluate((y) => window.tp.engine.load(y), cpu);
  expect('error' in load ? load.error : null).toBeNull();
  expect(await counts(h.page, since)).toMatchObject({ workersMade: 2, workersAlive: 2 });

  const out = await h.page.evaluate((y) => window.tp.engine.cancelDuring(y, '', 'dispose', 5), { ...cpu, maxTokens: 200 });
  if (!('tokens' in out)) throw new Error(out.error.message);
  expect(out.tokens).toEqual(story.slice(0, 5));
  expect('error' in out && out.error.code).toBe('DISPOSED');
  expect(await counts(h.page, since)).toMatchObject({ workersMade: 2, workersAlive: 0 });
});
