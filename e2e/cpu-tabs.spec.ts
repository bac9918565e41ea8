/**
 * A CPU rank in another tab (issue 22 with e2e/tabs-engine.spec.ts): the harness page creates an
 * engine of CPU ranks whose last rank runs in the demo opened at `?join=<id>`, in a worker of
 * that page, on its own WebAssembly memory. Greedy stories260K must be llama2.c's documented
 * sample beside one local CPU rank; beside a local SwiftShader rank (slower), its first 96 tokens.
 */
import { test, expect } from './fixtures.js';
import { expectDocumentedGreedy, greedy } from './greedy.js';
import type { PageGenerateOptions, PageGenerateResult } from '../src/cli/page/types.js';
import type { SerializedError } from '../src/errors.js';

const CPU = 'CPU (WebAssembly SIMD)';

const base: PageGenerateOptions = {
  model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 2, devices: 'cpu',
  prompt: '', maxTokens: 256, temperature: 0, topP: 0.9, seed: 1,
  // The tab rank loads through the same shard cache; off, so each test really fetches.
  cache: false,
};

test.describe.configure({ mode: 'serial' });

test.afterEach(async ({ harness }) => {
  await harness.page.evaluate(() => window.tp.engine.disposeAll());
});

for (const [devices, local] of [['cpu', CPU], [[{ forceFallbackAdapter: true }, { cpu: true }], 'swiftshader']] as const) {
  test(`a CPU rank in a joined demo tab beside a local ${local === CPU ? 'CPU' : 'SwiftShader'} rank: greedy stories260K is the documented sample${local === CPU ? '' : '\'s start'}`, async ({ harness }) => {
    const id = `e2e-cpu-${Date.now()}`;
    const join = await harness.browser.context.newPage();
    try {
      await join.goto(`${harness.server.url}/?join=${encodeURIComponent(id)}`);
      await expect(join.locator('#join-state')).toHaveText('Waiting for the host');
      const o = devices === 'cpu'
        ? { ...base, tabs: { id, count: 1 } }
        : { ...base, tp: 0, devices: [...devices], maxTokens: 96, tabs: { id, count: 1 } };
      const r = (await harness.page.evaluate((x) => window.tp.engine.generate(x), o)) as PageGenerateResult | { error: SerializedError };
      if ('error' in r) throw new Error(`${r.error.name}: ${r.error.message}`);
      expect(r.tp).toBe(2);
      if (devices === 'cpu') expectDocumentedGreedy(r);
      else expect(r.tokens).toEqual(greedy.tokens.slice(1, 97));
      expect(r.stats.ranks.map((x) => x.adapter)).toEqual([local, CPU]);
      // Rank 1 ran in the join page's worker, and the tab says so.
      expect(r.stats.ranks[1]!.steps).toBeGreaterThan(0);
      await expect(join.locator('#join-state')).toHaveText('Running · rank 1 of 2');
    } finally {
      await join.close();
    }
  });
}
