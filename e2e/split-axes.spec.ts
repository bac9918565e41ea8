/**
 * A split per axis on CPU ranks (issue 25): a stories110M-wide K-quant mix (dim 768: wo's inputs
 * are 3 super-blocks of 256, so 12 heads cannot go 6:6) at TP 2 with only the heads uneven,
 * `split: {heads: [8, 4]}`, the MLP and vocab even, gives the oracle's greedy tokens, as TP 1
 * does; under `auto`, two CPU ranks take that split by themselves. One layer, hidden 1024, a
 * 512-token vocabulary, 12 tokens: small enough to write and run in seconds.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import { loadGgufDequantized } from '../src/model/formats/gguf.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import { modelsDir } from '../test-support/fixtures/paths.js';
import { greedyDecided } from '../test-support/model/greedy-decided.js';
import { KQUANT_CONFIG, encodeTypedGguf, kquantModel, q4kmMix } from '../test-support/model/kquant-gguf.js';

const STEPS = 12;
// Seed 9 gives 12 distinct tokens, each ahead of the runner-up by more than 1e-3.
const SHAPE = { ...KQUANT_CONFIG, dim: 768, hiddenDim: 1024, nHeads: 12, nKvHeads: 12, nLayers: 1 };
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-split-axes-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('heads 8:4 with the MLP and vocab even on two CPU ranks: the oracle\'s greedy tokens, as at TP 1; auto takes the same split', async ({ harness }) => {
  test.setTimeout(60_000);
  const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
  const bytes = encodeTypedGguf(kquantModel(SHAPE, 9), q4kmMix, tok);
  const { model: deq } = await loadGgufDequantized(bytes);
  const { tokens: want, decided } = greedyDecided(deq, [1], STEPS);
  expect(decided, 'the oracle\'s margins').toBe(STEPS);
  writeFileSync(join(dir, 'mix.gguf'), bytes);
  const url = harness.server.mountFile('/files/split-axes/mix.gguf', join(dir, 'mix.gguf'));
  const base: PageGenerateOptions = {
    model: url, tp: 1, devices: 'cpu', prompt: '', maxTokens: STEPS, temperature: 0, topP: 0.9, seed: 1, cache: false, ignoreEos: true,
  };

  const r1 = await runGenerate(harness, base);
  expect(r1.tokens, 'TP 1').toEqual(want);

  const r2 = await runGenerate(harness, { ...base, tp: 2, split: { heads: [8, 4] } });
  expect(r2.tokens, 'TP 2, heads 8:4').toEqual(want);
  const p = r2.stats.placement!;
  expect(p.ranks.map((r) => [r.backend, r.heads, r.hidden, r.vocab])).toEqual([
    ['cpu', [0, 8], [0, 512], [0, 256]],
    ['cpu', [8, 12], [512, 1024], [256, 512]],
  ]);
  expect(p.split).toBe('explicit');
  expect(r2.stats.ranks.map((r) => r.precision.weights)).toEqual(['q8_m', 'q8_m']);

  // auto on this machine's fallback adapter: CPU ranks, and at 2 the per-axis split, not a PlanError
  const auto = await runGenerate(harness, { ...base, tp: 2, devices: 'auto', maxTokens: 4 });
  expect(auto.tokens).toEqual(want.slice(0, 4));
  expect(auto.stats.placement!.split).toBe('blocks');
  expect(auto.stats.placement!.ranks.map((r) => [r.backend, r.heads, r.hidden])).toEqual([['cpu', [0, 8], [0, 512]], ['cpu', [8, 12], [512, 1024]]]);
});
