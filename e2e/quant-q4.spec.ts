import { resolve } from 'node:path';
import type { Page } from '@playwright/test';
import { test, expect } from './fixtures.js';
import type { Q4MatmulCase } from '../test-support/page/kernels-q4.js';
import type { Check } from '../test-support/page/kernels.js';
import { modelsDir, readArrayBuffer } from '../test-support/fixtures/paths.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { q4Layout } from '../test-support/model/q4-layout.js';
import { argmax, generate } from '../src/model/reference.js';

/**
 * Q4_0 (GGML's 4-bit groups of 32, weight-only): the kernels against the f32 oracle on the
 * dequantised weights, then the engine on stories260K with its matrices stored as q4_0 against
 * the oracle's greedy tokens.
 */
async function each<T, R>(page: Page, fn: 'testQ4Matmul' | 'testQ4Embed', cases: T[]): Promise<R[]> {
  return page.evaluate(
    async ([name, cs]) => {
      const f = window.tp.q4[name] as (c: unknown) => Promise<unknown>;
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

test('Q4_0 matmul: gemv and gemm, fused inputs, bias, accumulate', async ({ harness }) => {
  const cases: Q4MatmulCase[] = [];
  for (const input of ['plain', 'rmsnorm', 'siluMul'] as const) {
    for (const k of [32, 96, 1024]) {
      cases.push({ m: 1, k, n: 65, input, bias: true }, { m: 1, k, n: 3, input, accumulate: true });
      cases.push({ m: 17, k, n: 33, input, accumulate: true }, { m: 3, k, n: 130, input, bias: true }, { m: 8, k, n: 257, input });
    }
  }
  expectWithin(await each<Q4MatmulCase, Check>(harness.page, 'testQ4Matmul', cases), cases);
});

test('Q4_0 matmul and embedding split across bindings match the oracle', async ({ harness }) => {
  const mm: Q4MatmulCase[] = [
    { m: 1, k: 64, n: 97, bindingLimit: 512 },
    { m: 5, k: 64, n: 97, input: 'rmsnorm', bindingLimit: 512 },
  ];
  const r = await each<Q4MatmulCase, Check & { chunks: number }>(harness.page, 'testQ4Matmul', mm);
  expectWithin(r, mm);
  for (const x of r) expect(x.chunks).toBeGreaterThan(1);
  const emb = [{ vocab: 512, dim: 64, tokens: [0, 511, 7, 7, 300] }, { vocab: 97, dim: 96, tokens: [96, 0, 50], bindingLimit: 512 }];
  const e = await each<(typeof emb)[number], Check & { chunks: number }>(harness.page, 'testQ4Embed', emb);
  expectWithin(e, emb);
  expect(e[1]!.chunks).toBeGreaterThan(1);
});

// stories260K with every matrix whose rows are whole groups of 32 stored as q4_0 (the embedding,
// which is also the classifier, and wq, wk, wv, wo, w1, w3 of every layer); w2 (172 columns:
// Q4_0 cannot hold it) and the norms stay f32, so f32 and q4_0 matrices run side by side.
const q4Model = { model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin' };

function oracleTokens(prompt: number[], steps: number, keepF32: string[] = []): number[] {
  const bytes = readArrayBuffer(resolve(modelsDir, 'stories260K.bin'));
  const { oracle } = q4Layout(bytes, loadLlama2c(bytes).tensors, (t) => !keepF32.includes(t.name));
  return generate(oracle, prompt, steps, (l) => argmax(l, 512)).slice(prompt.length);
}

test('stories260K as q4_0 at TP 1 and 2: the f32 oracle\'s greedy tokens on the dequantised weights', async ({ harness }) => {
  test.setTimeout(240_000);
  // TP 1 decodes from BOS (gemv); TP 2 first prefills a prompt of 6 rows (gemm).
  const prompt = [1, 403, 407, 261, 378, 275];
  for (const [tp, p] of [[1, [1]], [2, prompt]] as const) {
    const want = oracleTokens([...p], 100 + p.length - 1);
    // The quantised model is a different model: it must not merely reproduce the f32 one's tokens.
    const f32 = generate(loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin'))), [...p], 100 + p.length - 1, (l) => argmax(l, 512)).slice(p.length);
    expect(want).not.toEqual(f32);
    const r = await harness.page.evaluate((o) => window.tp.q4engine.greedy(o), { ...q4Model, tp, maxTokens: 100, prompt: [...p] });
    if ('error' in r) throw new Error(JSON.stringify(r.error));
    expect(r.tp).toBe(tp);
    expect(r.quantised.length).toBe(31);
    expect(r.tokens).toEqual(want);
  }
});

test('stories260K as q4_0 at TP 4 is a PlanError (a head split inside a group of wo\'s columns); with wo f32 it runs', async ({ harness }) => {
  test.setTimeout(120_000);
  const r = await harness.page.evaluate((o) => window.tp.q4engine.greedy(o), { ...q4Model, tp: 4, maxTokens: 4 });
  expect('error' in r ? r.error.name : null).toBe('PlanError');
  expect('error' in r ? r.error.message : '').toMatch(/column 16 of wo, inside a quantisation group of 32/);
  // wo kept f32 lets TP 4 split; layer 1's wk kept f32 too makes its fused wq|wk|wv mixed (run as f32).
  const keepF32 = [...Array.from({ length: 5 }, (_, l) => `layers.${l}.attention.wo`), 'layers.1.attention.wk'];
  const want = oracleTokens([1], 40, keepF32);
  const ok = await harness.page.evaluate((o) => window.tp.q4engine.greedy(o), { ...q4Model, tp: 4, maxTokens: 40, keepF32 });
  if ('error' in ok) throw new Error(JSON.stringify(ok.error));
  expect(ok.quantised.length).toBe(25);
  expect(ok.tokens).toEqual(want);
});
