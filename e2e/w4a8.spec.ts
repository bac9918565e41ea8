import type { Page } from '@playwright/test';
import { test, expect } from './fixtures.js';
import type { Q4MatmulCase } from '../src/harness/kernels-q4.js';
import type { Check } from '../src/harness/kernels.js';

/**
 * W4A8 (Q4_0 weights, int8 activations): the kernels against runq.c's W8A8 arithmetic on the
 * weights' exact Q8_0 form, then the engine on stories260K written as a Q4_0 GGUF with
 * `int8Activations` against the oracle that quantises the activations the same way.
 */
async function matmuls(page: Page, cases: Q4MatmulCase[]): Promise<(Check & { chunks: number })[]> {
  return page.evaluate(async (cs) => {
    const out: (Check & { chunks: number })[] = [];
    for (const c of cs) out.push(await window.tp.q4.testQ4Matmul(c));
    return out;
  }, cases);
}

function expectWithin(results: Check[], cases: unknown[]): void {
  const bad = results.map((r, i) => ({ r, c: cases[i] })).filter(({ r }) => !(r.worst <= 1));
  expect(bad, JSON.stringify(bad.slice(0, 5))).toEqual([]);
}

test.describe.configure({ mode: 'serial' });

test('W4A8 matmul: gemv and gemm, fused inputs, bias, accumulate, rows split across bindings', async ({ harness }) => {
  const cases: Q4MatmulCase[] = [];
  for (const input of ['plain', 'rmsnorm', 'siluMul'] as const) {
    for (const k of [32, 96, 1024]) {
      cases.push({ m: 1, k, n: 65, input, bias: true }, { m: 1, k, n: 3, input, accumulate: true }, { m: 1, k, n: 300, input });
      cases.push({ m: 17, k, n: 33, input, accumulate: true }, { m: 3, k, n: 130, input, bias: true });
    }
  }
  cases.push({ m: 1, k: 64, n: 97, bindingLimit: 512 }, { m: 5, k: 64, n: 97, input: 'rmsnorm', bindingLimit: 512 });
  // Large activations and weights of either sign: the pair sums' range is used in full.
  cases.push({ m: 1, k: 4096, n: 40, seed: 11 }, { m: 2, k: 4096, n: 8, seed: 12 });
  for (const c of cases) c.activations = 'int8';
  const r = await matmuls(harness.page, cases);
  expectWithin(r, cases);
  expect(r.at(-4)!.chunks).toBeGreaterThan(1);
});
