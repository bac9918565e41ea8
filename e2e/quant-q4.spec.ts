import type { Page } from '@playwright/test';
import { test, expect } from './fixtures.js';
import type { Q4MatmulCase } from '../src/harness/kernels-q4.js';
import type { Check } from '../src/harness/kernels.js';

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
