/**
 * Soak on stories260K at TP=2 with maxBatch 4: 100 requests one after another, then 20 at once
 * (16 of them queue). Every response must be the CPU oracle's greedy continuation
 * (src/model/reference.ts), requests must start in arrival order, and the workers, live GPU
 * buffers and shard-cache entries, counted from outside the engine (e2e/counting.ts and raw
 * IndexedDB), must stay where they were after the first request.
 */
import { expect, withInitScript } from './fixtures.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sharedModelsDir } from '../src/cli/browser.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { argmax, generate as oracle } from '../src/model/reference.js';
import { mulberry32 } from '../src/model/mulberry32.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import { COUNTING_INIT, cacheEntries, counts } from './counting.js';

const test = withInitScript(COUNTING_INIT);

const o: PageGenerateOptions = {
  model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 2, maxBatch: 4,
  prompt: '', maxTokens: 8, temperature: 0, topP: 0.9, seed: 1,
};

const bytes = readFileSync(join(sharedModelsDir, 'stories260K.bin'));
const model = loadLlama2c(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
const BOS = 1;
const EOS = 2;

/** `n` requests with seeded random prompts (BOS + 1..12 tokens) and `minTokens`..`minTokens + 3` new tokens each. */
function requests(n: number, seed: number, minTokens: number): { tokens: number[]; maxTokens: number }[] {
  const rand = mulberry32(seed);
  return Array.from({ length: n }, () => {
    const len = 1 + Math.floor(rand() * 12);
    const tokens = [BOS, ...Array.from({ length: len }, () => 3 + Math.floor(rand() * (model.config.vocabSize - 3)))];
    return { tokens, maxTokens: minTokens + Math.floor(rand() * 4) };
  });
}

/** The oracle's greedy continuation, ended where the engine ends it (BOS or EOS, or maxTokens). */
function expected(r: { tokens: number[]; maxTokens: number }): number[] {
  const out = oracle(model, r.tokens, r.tokens.length - 1 + r.maxTokens, (l) => argmax(l, model.config.vocabSize)).slice(r.tokens.length);
  const end = out.indexOf(EOS);
  return end >= 0 ? out.slice(0, end) : out;
}

test('100 sequential then 20 concurrent requests: each correct, started in arrival order, workers/buffers/cache entries flat', async ({ counted: h }) => {
  const warm = await h.page.evaluate(([x, r]) => window.tp.engine.runRequests(x, r, false), [o, requests(1, 99, 2)] as const);
  if ('error' in warm) throw new Error(warm.error.message);
  const base = { ...(await counts(h.page)), cache: await cacheEntries(h.page) };
  expect(base.workersAlive).toBe(2);
  expect(base.cache).toBeGreaterThanOrEqual(2);

  // 1..4 tokens each: a quarter end at their prefill's token, the rest decode as well
  const seq = requests(100, 1, 1);
  const s = await h.page.evaluate(([x, r]) => window.tp.engine.runRequests(x, r, false), [o, seq] as const);
  if ('error' in s) throw new Error(s.error.message);
  expect(s.outcomes).toEqual(seq.map((r) => ({ tokens: expected(r) })));
  expect({ ...(await counts(h.page)), cache: await cacheEntries(h.page) }).toEqual(base);

  const con = requests(20, 2, 6);
  const c = await h.page.evaluate(([x, r]) => window.tp.engine.runRequests(x, r, true), [o, con] as const);
  if ('error' in c) throw new Error(c.error.message);
  expect(c.outcomes).toEqual(con.map((r) => ({ tokens: expected(r) })));
  // The order of first tokens is the order of arrival (requests that produced none excepted).
  const started = c.starts.filter((x) => x >= 0);
  expect(started).toEqual([...started].sort((a, b) => a - b));
  expect(started.length).toBeGreaterThan(15);
  expect({ ...(await counts(h.page)), cache: await cacheEntries(h.page) }).toEqual(base);
  await h.page.evaluate(() => window.tp.engine.disposeAll());
});
