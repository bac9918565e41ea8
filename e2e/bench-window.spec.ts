import { test, expect } from './fixtures.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';

// `bench generate --batch B` reports the decode rate while all B streams decode. Prompts are
// prefilled a chunk of rows per step in arrival order, so the streams start decoding steps
// apart and end steps apart; the steps where the batch runs down must not be counted.
test('timedConcurrent counts only the steps in which every stream decodes', async ({ harness }) => {
  const o: PageGenerateOptions = {
    model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 1, prompt: '', maxTokens: 12,
    temperature: 0, topP: 0.9, seed: 1, ignoreEos: true,
    // 8 rows a step: each prompt needs more than one step, so the first tokens come steps apart.
    maxRows: 8, maxBatch: 3,
  };
  const prompt = 'Lily and Ben went to the park to play with a ball';
  const requests = [0, 1, 2].map(() => ({ prompt, maxTokens: 12 }));
  const r = await harness.page.evaluate(([opts, q]) => window.tp.engine.timedConcurrent(opts, q), [o, requests] as const);
  if ('error' in r) throw new Error(r.error.message);
  expect(r.tokens.map((t) => t.length)).toEqual([12, 12, 12]);
  // Each step of the window gives every stream one token; counting on to the last token would
  // add the run-down steps of 2 rows and then 1 row.
  expect(r.decodeTokens % 3).toBe(0);
  expect(r.decodeTokens).toBeGreaterThan(0);
  expect(r.decodeTokens).toBeLessThan(3 * 11);
  expect(r.decodeMs).toBeGreaterThan(0);
});

// `bench generate --rounds N` interleaves TP degrees round by round on engines kept loaded: the
// page must reuse an engine of the same options while keepEngines allows, and reload otherwise.
test('the page keeps up to keepEngines engines loaded and reuses them', async ({ harness }) => {
  // CPU ranks: reuse is the page's, whatever the kind, and they load in a fraction of GPU ranks' time.
  const base = { model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', devices: 'cpu' as const, prompt: '', maxTokens: 1, temperature: 0, topP: 0.9, seed: 1, cache: false };
  const load = (o: PageGenerateOptions) => harness.page.evaluate(async (x) => {
    const r = await window.tp.engine.load(x);
    if ('error' in r) throw new Error(r.error.message);
    return r.loadMs;
  }, o);
  try {
    const kept = { ...base, keepEngines: 2 };
    expect(await load({ ...kept, tp: 1 })).toBeGreaterThan(0);
    expect(await load({ ...kept, tp: 2 })).toBeGreaterThan(0);
    // Both still loaded: loading either again is a reuse (no load time).
    expect(await load({ ...kept, tp: 1 })).toBe(0);
    expect(await load({ ...kept, tp: 2 })).toBe(0);
    // One engine at a time (the default): the other degree is disposed and must load again.
    expect(await load({ ...base, tp: 1 })).toBe(0);
    expect(await load({ ...base, tp: 2 })).toBeGreaterThan(0);
    expect(await load({ ...base, tp: 1 })).toBeGreaterThan(0);
  } finally {
    await harness.page.evaluate(() => window.tp.engine.disposeAll());
  }
});
