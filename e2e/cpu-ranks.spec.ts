/**
 * CPU ranks (issue 22): shard workers that compute with WebAssembly SIMD instead of WebGPU.
 * Greedy stories260K on CPU ranks must be llama2.c's documented sample token for token, as on
 * GPU ranks (e2e/engine.spec.ts); a GPU rank and a CPU rank in one engine must agree with it
 * too; an engine of CPU ranks only must run in a page with no `navigator.gpu`; and what a CPU
 * rank cannot run yet (quantised weights) must fail at load, typed.
 */
import { test, expect } from './fixtures.js';
import { expectDocumentedGreedy, greedy } from './greedy.js';
import { openHarness } from '../src/cli/browser.js';
import { TEST_PAGE } from '../test-support/test-page.js';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';

const CPU = 'CPU (WebAssembly SIMD)';

const base: PageGenerateOptions = {
  model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 1, devices: 'cpu',
  prompt: '', maxTokens: 256, temperature: 0, topP: 0.9, seed: 1,
};

test.describe.configure({ mode: 'serial' });

for (const tp of [1, 2]) {
  test(`greedy stories260K on ${tp} CPU rank${tp === 1 ? '' : 's'} is llama2.c's documented sample, token for token`, async ({ harness }) => {
    const r = await runGenerate(harness, { ...base, tp });
    expect(r.tp).toBe(tp);
    expectDocumentedGreedy(r);
    const p = r.stats.placement!;
    expect(p.mode).toBe('cpu');
    expect(p.adapters).toEqual([CPU]);
    expect(p.ranks.map((x) => [x.spec, x.adapter])).toEqual(Array.from({ length: tp }, () => ['cpu', CPU]));
    for (const rank of r.stats.ranks) {
      expect(rank.adapter).toBe(CPU);
      expect(rank.precision).toEqual({ weights: 'f32', math: 'f32', f16Kernels: 'packed', kvCache: 'f32', kvCacheKernels: 'f32' });
      expect(rank.weightBytes).toBeGreaterThan(0);
      expect(rank.workBytes).toBeGreaterThan(0);
    }
  });
}

test('a GPU rank and a CPU rank in one engine give the same tokens', async ({ harness }) => {
  const r = await runGenerate(harness, { ...base, tp: 0, devices: [{ forceFallbackAdapter: true }, { cpu: true }], maxTokens: 64 });
  expect(r.tp).toBe(2);
  expect(r.tokens).toEqual(greedy.tokens.slice(1, 65));
  expect(r.stats.placement!.ranks.map((x) => x.spec)).toEqual(['fallback', 'cpu']);
  expect(r.stats.ranks.map((x) => x.adapter)).toEqual(['swiftshader', CPU]);
});

test('quantised weights on a CPU rank fail at load with ModelFormatError', async ({ harness }) => {
  const err = await runGenerate(harness, { ...base, model: '/models/stories260K-q8.bin', weightOnly: true, maxTokens: 4 }).then(
    () => null,
    (e: Error) => e,
  );
  expect(err).not.toBeNull();
  expect(err!.name).toBe('ModelFormatError');
  expect(err!.message).toContain('CPU ranks take f32 or f16 weights');
});

test('with no navigator.gpu, an engine of CPU ranks generates', async () => {
  const h = await openHarness({ path: TEST_PAGE, initScript: 'delete Navigator.prototype.gpu;', probe: false });
  try {
    expect(await h.page.evaluate(() => 'gpu' in navigator)).toBe(false);
    const r = await runGenerate(h, { ...base, tp: 2, maxTokens: 32 });
    expect(r.tokens).toEqual(greedy.tokens.slice(1, 33));
  } finally {
    await h.close();
  }
});
