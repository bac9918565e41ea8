import { test, expect } from './fixtures.js';
import type { Page } from '@playwright/test';
import type { MatmulCase, Check } from '../test-support/page/kernels.js';

/**
 * GPU kernels against the CPU oracle (src/model/reference.ts) on random inputs, in real Chromium.
 * Tolerance per element: |gpu − ref| ≤ 1e-5 · (the op's sum of magnitudes, e.g. Σ|wᵢxᵢ|) + 1e-6,
 * reported by the page as `worst` (≤ 1 passes).
 */
const SIZES = [1, 3, 17, 63, 65, 1000, 2049];

type K = Window['tp']['kernels'];

type Tester = 'testMatmul' | 'testAdd' | 'testEmbed' | 'testKvWrite' | 'testAttention';
type Case<N extends Tester> = Parameters<K[N]>[0];
type Result<N extends Tester> = Awaited<ReturnType<K[N]>>;

/** Runs `window.tp.kernels[name](c)` for each case in one page round trip. */
async function each<N extends Tester>(page: Page, name: N, cases: Case<N>[]): Promise<Result<N>[]> {
  return page.evaluate(
    async ([fn, cs]) => {
      const f = window.tp.kernels[fn] as (c: unknown) => Promise<unknown>;
      const out: unknown[] = [];
      for (const c of cs) out.push(await f(c));
      return out;
    },
    [name, cases] as [N, Case<N>[]],
  ) as Promise<Result<N>[]>;
}

function expectWithin(results: Check[], cases: unknown[]): void {
  const bad = results.map((r, i) => ({ r, c: cases[i] })).filter(({ r }) => !(r.worst <= 1));
  expect(bad, JSON.stringify(bad.slice(0, 5))).toEqual([]);
}

test.describe.configure({ mode: 'serial' });

test('context: real limits and features, kernel choices recorded', async ({ harness }) => {
  const info = await harness.page.evaluate(() => window.tp.kernels.info());
  expect(info.limits.maxStorageBufferBindingSize).toBeGreaterThan(128 * 1024 * 1024);
  expect(info.limits.maxComputeInvocationsPerWorkgroup).toBeGreaterThanOrEqual(256);
  expect(typeof info.features.subgroups).toBe('boolean');
  expect(['regblock', 'tiled', 'broadcast', 'broadcast16']).toContain(info.choices.gemm);
  expect(['tree', 'subgroup']).toContain(info.choices.gemv);
  expect(['gemm', 'broadcast', 'broadcast32', 'prep32']).toContain(info.choices.small);
  expect(Object.keys(info.choices.measured).length).toBeGreaterThan(0);
});

test('context: no adapter → WebGpuUnavailableError; works in a Worker', async ({ harness }) => {
  const r = await harness.page.evaluate(() => window.tp.kernels.testContextErrors());
  expect(r.code).toBe('NO_WEBGPU');
  const w = await harness.page.evaluate(() => window.tp.kernels.testInWorker());
  expect(w.error).toBeUndefined();
  expect(w.worst).toBeLessThanOrEqual(1);
  expect(w.readbackMs).toBeGreaterThan(0);
});

test('matmul m=1 (gemv), every K × N', async ({ harness }) => {
  const cases: MatmulCase[] = [];
  for (const k of SIZES) for (const n of SIZES) cases.push({ m: 1, k, n, seed: k * 7 + n });
  expectWithin(await each(harness.page, 'testMatmul', cases), cases);
});

test('matmul m>1 (gemm), K × N with m ∈ {3, 17, 65}', async ({ harness }) => {
  const cases: MatmulCase[] = [];
  for (const k of SIZES) for (const n of SIZES) if (k * n <= 65 * 2049) cases.push({ m: 3, k, n });
  for (const k of [17, 65, 1000]) for (const n of [3, 63, 65]) cases.push({ m: 17, k, n });
  cases.push({ m: 65, k: 63, n: 65 }, { m: 65, k: 2049, n: 17 }, { m: 2, k: 1000, n: 1000 });
  expectWithin(await each(harness.page, 'testMatmul', cases), cases);
});

test('matmul: every variant, fused RMSNorm / SiLU·mul input, bias, accumulate', async ({ harness }) => {
  const info = await harness.page.evaluate(() => window.tp.kernels.variants());
  const cases: MatmulCase[] = [];
  for (const input of ['plain', 'rmsnorm', 'siluMul'] as const) {
    for (const gemv of info.gemv) {
      cases.push({ m: 1, k: 1000, n: 65, input, gemv, bias: true }, { m: 1, k: 17, n: 3, input, gemv, accumulate: true });
    }
    for (const gemm of info.gemm) {
      cases.push({ m: 65, k: 63, n: 17, input, gemm, bias: true, accumulate: true }, { m: 3, k: 1000, n: 65, input, gemm }, { m: 33, k: 3, n: 2049, input, gemm });
    }
  }
  expectWithin(await each(harness.page, 'testMatmul', cases), cases);
});

test('matmul 2 ≤ m ≤ 8 (decode batch): every small-m variant, fused inputs, bias, accumulate, awkward K × N', async ({ harness }) => {
  const { small } = await harness.page.evaluate(() => window.tp.kernels.variants());
  const cases: MatmulCase[] = [];
  for (const s of small) {
    for (const input of ['plain', 'rmsnorm', 'siluMul'] as const) {
      // m = 9 is past the small-m kernels: the m > 8 gemm runs.
      for (const m of [2, 5, 8, 9]) cases.push({ m, k: 63, n: 65, input, small: s, bias: m === 5, accumulate: m !== 5 });
      cases.push({ m: 3, k: 1000, n: 33, input, small: s }, { m: 8, k: 17, n: 1000, input, small: s, bias: true }, { m: 7, k: 288, n: 31, input, small: s });
    }
  }
  expectWithin(await each(harness.page, 'testMatmul', cases), cases);
});

test('matmul: a weight larger than the binding limit is split across bindings', async ({ harness }) => {
  const cases: MatmulCase[] = [
    { m: 1, k: 65, n: 1000, bindingLimit: 65 * 4 * 128 },
    { m: 5, k: 65, n: 1000, bindingLimit: 68 * 4 * 100, input: 'rmsnorm', bias: true },
    { m: 3, k: 17, n: 63, bindingLimit: 20 * 4 * 7, accumulate: true },
  ];
  const r = await each(harness.page, 'testMatmul', cases);
  expectWithin(r, cases);
  for (const x of r) expect(x.chunks).toBeGreaterThan(1);
});

test('matmul: grids over 65535 workgroups fold into 2-D (vocab-sized N)', async ({ harness }) => {
  const { gemv } = await harness.page.evaluate(() => window.tp.kernels.variants());
  // More than 65535 workgroups: the subgroup gemv takes 16 rows per workgroup, the tree one 4.
  const big: MatmulCase = gemv.includes('subgroup') ? { m: 1, k: 3, n: 1_100_000, gemv: 'subgroup' } : { m: 1, k: 3, n: 300_000, gemv: 'tree' };
  const cases: MatmulCase[] = [big, { m: 1, k: 64, n: 151_936 }, { m: 2, k: 8, n: 151_936 }];
  const v = await harness.page.evaluate(() => window.tp.kernels.variants());
  // broadcast: 16 rows of W per workgroup along x (folded into z).
  if (v.gemm.includes('broadcast')) cases.push({ m: 3, k: 3, n: 1_100_000, gemm: 'broadcast' }, { m: 17, k: 5, n: 151_936, gemm: 'broadcast16' });
  // broadcast32 and prep32: 32 rows of W per workgroup. The grid is the same for every m ≤ 8 (one
  // block of x rows); m = 2 keeps the 2.2M-row output and its oracle small. Full blocks of 8 rows
  // are the decode-batch test's.
  for (const small of v.small.filter((s) => s !== 'gemm')) cases.push({ m: 2, k: 5, n: 2_200_000, small, input: 'rmsnorm' });
  expectWithin(await each(harness.page, 'testMatmul', cases), cases);
});

test('add at awkward sizes', async ({ harness }) => {
  const ew = SIZES.flatMap((n) => [{ m: 1, n }, { m: 3, n }]);
  expectWithin(await each(harness.page, 'testAdd', ew), ew);
});

test('embed, also from a table split across bindings', async ({ harness }) => {
  const cases = [
    { vocab: 1000, dim: 63, tokens: [0, 999, 17, 17, 500] },
    { vocab: 3, dim: 1, tokens: [2] },
    { vocab: 1000, dim: 65, tokens: [0, 999, 17, 333, 334, 666], bindingLimit: 68 * 4 * 100 },
  ];
  const r = await each(harness.page, 'testEmbed', cases);
  expectWithin(r, cases);
  expect(r[2]!.chunks).toBeGreaterThan(1);
});

test('fused rope + kv write, across slots', async ({ harness }) => {
  const cases = [
    { nHeads: 4, nKv: 2, headSize: 8, positions: [5, 6, 7], slots: [1, 1, 0], style: 'interleaved' as const },
    { nHeads: 4, nKv: 4, headSize: 16, positions: [0, 1, 300], slots: [0, 0, 2], nSlots: 3, style: 'rotate_half' as const },
  ];
  expectWithin(await each(harness.page, 'testKvWrite', cases), cases);
});

test('attention, every variant (exact: bit for bit): positions 0, 1, 300; GQA 1 and 2; decode and causal prefill', async ({ harness }) => {
  const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);
  const kinds = await harness.page.evaluate(() => window.tp.kernels.attentionVariants(128));
  // SwiftShader has subgroups: both variants must be checked, not only the default.
  expect(kinds).toEqual(['subgroup', 'workgroup']);
  const cases = [];
  // `exact` (run.c's order, the runq.c-exact W8A8 path) must equal the oracle bit for bit.
  for (const kind of [...kinds, 'exact' as const]) {
    for (const [nHeads, nKv] of [[4, 4], [4, 2]]) {
      for (const p of [0, 1, 300]) cases.push({ nHeads, nKv, headSize: 32, positions: [p], kind });
      cases.push({ nHeads, nKv, headSize: 16, positions: range(0, 17), kind });
      cases.push({ nHeads, nKv, headSize: 64, positions: range(290, 301), slots: range(290, 301).map(() => 1), kind });
    }
    cases.push({ nHeads: 2, nKv: 1, headSize: 128, positions: [300, 0, 1], slots: [0, 2, 1], kind });
    cases.push({ nHeads: 2, nKv: 2, headSize: 8, positions: [1000], kind });
    cases.push({ nHeads: 2, nKv: 2, headSize: 6, positions: [3, 40], slots: [0, 1], kind }); // hs not a multiple of the lanes
  }
  expectWithin(await each(harness.page, 'testAttention', cases), cases);
});

test('fused step chain: rmsnorm→qkv matmul→rope+kv→attention matches the unfused ops', async ({ harness }) => {
  const r = await harness.page.evaluate(() => window.tp.kernels.testFusedChain());
  expect(r.worst, JSON.stringify(r)).toBeLessThanOrEqual(1);
});

test('readback helper: reads learnt to be long go unpoked and still complete', async ({ harness }) => {
  const r = await harness.page.evaluate(() => window.tp.kernels.testReadbackQuiet());
  expect(r.intact).toBe(true);
  expect(r.quietPokes).toBe(0);
  expect(r.pokedPokes).toBeGreaterThan(0);
});

test('readback helper: data intact, `into`, single-use tickets, ring slots', async ({ harness }) => {
  const r = await harness.page.evaluate(() => window.tp.kernels.testReadback());
  expect(r.detail).toBe('');
  expect(r.ok).toBe(true);
});
