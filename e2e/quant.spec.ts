import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Page } from '@playwright/test';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions } from '../src/harness/types.js';
import type { Q8MatmulCase } from '../src/harness/kernels-q8.js';
import type { Check } from '../src/harness/kernels.js';
import { loadLlama2cV2 } from '../src/model/formats/llama2c-v2.js';
import { dequantizeQ8Model } from '../src/model/reference-q8.js';
import { argmax, generate } from '../src/model/reference.js';
import { modelsDir, readArrayBuffer } from '../src/model/fixtures/paths.js';

/**
 * Q8_0 (llama2.c v2 / runq.c): the kernels against the CPU oracles, then the engine on
 * stories260K-q8.bin against the runq.c-faithful oracle's tokens (W8A8) and the f32 oracle on
 * the dequantised weights (weight-only).
 */
const q8Greedy = JSON.parse(readFileSync(new URL('../src/model/fixtures/stories260K-q8-greedy.json', import.meta.url), 'utf8')) as { tokens: number[]; text: string };

async function each<T, R>(page: Page, fn: 'testQ8Matmul' | 'testQ8Embed', cases: T[]): Promise<R[]> {
  return page.evaluate(
    async ([name, cs]) => {
      const f = window.tp.q8[name] as (c: unknown) => Promise<unknown>;
      const out: unknown[] = [];
      for (const c of cs) out.push(await f(c));
      return out;
    },
    [fn, cases] as const,
  ) as Promise<R[]>;
}

function expectWithin(results: Check[], cases: unknown[]): void {
  const bad = results.map((r, i) => ({ r, c: cases[i] })).filter(({ r }) => !(r.worst <= 1));
  expect(bad, JSON.stringify(bad.slice(0, 5))).toEqual([]);
}

test.describe.configure({ mode: 'serial' });

test('Q8_0 matmul, weight-only and W8A8: gemv and gemm, group sizes 4 / 32, fused inputs, bias, accumulate', async ({ harness }) => {
  const cases: Q8MatmulCase[] = [];
  for (const activations of ['f32', 'int8'] as const) {
    for (const input of ['plain', 'rmsnorm', 'siluMul'] as const) {
      for (const [k, groupSize] of [[64, 4], [172, 4], [96, 32], [1024, 32]] as const) {
        cases.push({ m: 1, k, n: 65, groupSize, activations, input, bias: true }, { m: 1, k, n: 3, groupSize, activations, input, accumulate: true });
        cases.push({ m: 17, k, n: 33, groupSize, activations, input, accumulate: true }, { m: 3, k, n: 130, groupSize, activations, input, bias: true });
      }
    }
  }
  expectWithin(await each<Q8MatmulCase, Check>(harness.page, 'testQ8Matmul', cases), cases);
});

test('Q8_0 matmul and embedding split across bindings match the oracle', async ({ harness }) => {
  const mm: Q8MatmulCase[] = [
    { m: 1, k: 64, n: 97, groupSize: 4, activations: 'int8', bindingLimit: 1024 },
    { m: 5, k: 64, n: 97, groupSize: 4, activations: 'f32', bindingLimit: 1024 },
  ];
  const r = await each<Q8MatmulCase, Check & { chunks: number }>(harness.page, 'testQ8Matmul', mm);
  expectWithin(r, mm);
  for (const x of r) expect(x.chunks).toBeGreaterThan(1);
  const emb = [{ vocab: 512, dim: 64, groupSize: 4, tokens: [0, 511, 7, 7, 300] }, { vocab: 97, dim: 32, groupSize: 32, tokens: [96, 0, 50], bindingLimit: 512 }];
  const e = await each<(typeof emb)[number], Check & { chunks: number }>(harness.page, 'testQ8Embed', emb);
  expectWithin(e, emb);
  expect(e[1]!.chunks).toBeGreaterThan(1);
});

const base: PageGenerateOptions = {
  model: '/models/stories260K-q8.bin',
  tokenizer: '/models/tok512.bin',
  tp: 1,
  prompt: '',
  maxTokens: 200,
  temperature: 0,
  topP: 0.9,
  seed: 1,
};

test('stories260K-q8 W8A8 greedy at TP=1: the runq.c oracle\'s 200 tokens and runq.c\'s text', async ({ harness }) => {
  const r = await runGenerate(harness, { ...base, tp: 1 });
  expect(r.tokens).toEqual(q8Greedy.tokens.slice(1));
  expect(r.text).toBe(q8Greedy.text);
  expect(r.text).toContain('She said, "I\'m sorry, Lily. I didn\'t know what to do."\nLily didn\'t want to help, but she did');
  expect(r.text.split('\n').at(-1)).toBe('Lily didn\'t want to help, but she did');
});

// Known issue: at TP=2 the row-parallel matmuls sum their groups in two halves that meet in the
// all-reduce, not in runq.c's one sequential sum. W8A8 requantises every activation, so a
// last-bit difference can move a value across a rounding half and grow; here the tokens part at
// position 185, the sample's narrowest greedy margin (top-2 logit gap 0.012). runq.c's
// arithmetic with TP=2's summation order (reference-q8.ts `Q8Split`) parts from runq.c there
// too (at 195). Exact agreement needs the partial sums chained across ranks in runq.c's order.
test('stories260K-q8 W8A8 greedy at TP=2: runq.c\'s tokens and text up to the third line', async ({ harness }) => {
  const r = await runGenerate(harness, { ...base, tp: 2 });
  expect(r.tp).toBe(2);
  const shared = 'She said, "I\'m sorry, Lily. I didn\'t know what to do."';
  const cut = q8Greedy.text.indexOf(shared) + shared.length;
  expect(r.text.slice(0, cut)).toBe(q8Greedy.text.slice(0, cut));
  expect(r.tokens.slice(0, 150)).toEqual(q8Greedy.tokens.slice(1, 151));
});

test.fail('KNOWN FAILING: stories260K-q8 W8A8 greedy at TP=2 equals runq.c token for token (all 200)', async ({ harness }) => {
  const r = await runGenerate(harness, { ...base, tp: 2 });
  expect(r.tokens).toEqual(q8Greedy.tokens.slice(1));
});

test('stories260K-q8 weight-only (f32 activations) at TP=1 and 2: the f32 oracle on the dequantised weights', async ({ harness }) => {
  const model = dequantizeQ8Model(loadLlama2cV2(readArrayBuffer(resolve(modelsDir, 'stories260K-q8.bin'))));
  const want = generate(model, [1], 120, (l) => argmax(l, 512)).slice(1);
  for (const tp of [1, 2]) {
    const r = await runGenerate(harness, { ...base, tp, maxTokens: 120, weightOnly: true });
    expect(r.tokens).toEqual(want);
  }
});
