/**
 * CPU ranks (issue 22): shard workers that compute with WebAssembly SIMD instead of WebGPU.
 * Greedy stories260K on CPU ranks at TP 1, 2, 4 and 8 must be llama2.c's documented sample
 * token for token, and the seeded sample run.c's, as on GPU ranks (e2e/engine.spec.ts); CPU
 * ranks with uneven splits, and a SwiftShader rank beside a CPU rank, must agree with it too;
 * concurrent requests must get the tokens each gets alone; an engine of CPU ranks only must run
 * in a page with no `navigator.gpu`; and what a CPU rank cannot run yet (quantised weights) must
 * fail at load, typed. F16 weights, faults and memory are in cpu-f16, cpu-faults and cpu-memory.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, expect } from './fixtures.js';
import { expectDocumentedGreedy, greedy } from './greedy.js';
import { openHarness, type Harness } from '../src/cli/browser.js';
import { TEST_PAGE } from '../test-support/test-page.js';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import { llama2cConfig, writeSynthCheckpoint, writeSynthTokenizer } from '../src/model/synth.js';
import { readArrayBuffer } from '../test-support/fixtures/paths.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { generate as oracle } from '../src/model/reference.js';
import { Sampler } from '../src/model/sampler.js';

const CPU = 'CPU (WebAssembly SIMD)';

// The oracle's seeded tokens (src/model/reference.ts, checked against llama2.c's run.c): BOS first.
const seeded = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-seeded.json', import.meta.url), 'utf8')) as { tokens: number[]; text: string };

const base: PageGenerateOptions = {
  model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 1, devices: 'cpu',
  prompt: '', maxTokens: 256, temperature: 0, topP: 0.9, seed: 1,
};

test.describe.configure({ mode: 'serial' });

// Each degree's seeded test runs right after its greedy one, on the engine that one loaded.
for (const tp of [1, 2, 4, 8]) {
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

  test(`seeded sample (T=1.0, top-p 0.9, seed 133742) on ${tp} CPU rank${tp === 1 ? '' : 's'} is llama2.c's`, async ({ harness }) => {
    const r = await runGenerate(harness, { ...base, tp, temperature: 1.0, topP: 0.9, seed: 133742 });
    expect(r.tokens).toEqual(seeded.tokens.slice(1));
    expect(r.text.startsWith('Once upon a time, there was a little boy named Timmy. Timmy loved to play with his toys and eat sandwiches.')).toBe(true);
  });
}

test('concurrent requests on 2 CPU ranks are batched, and each gets the tokens it gets alone', async ({ harness }) => {
  const o = { ...base, tp: 2 };
  const requests = [
    { prompt: '', maxTokens: 24 },
    { prompt: 'Lily and Ben went to the park', maxTokens: 16 },
    { prompt: 'The cat sat', maxTokens: 20 },
    { prompt: 'Once upon a time, a little dog named Max wanted to find the biggest bone', maxTokens: 12 },
  ];
  const together = await harness.page.evaluate(([x, r]) => window.tp.engine.generateConcurrent(x, r), [o, requests] as const);
  expect('error' in together ? together.error : null).toBeNull();
  const alone: number[][] = [];
  for (const r of requests) alone.push((await runGenerate(harness, { ...o, prompt: r.prompt, maxTokens: r.maxTokens })).tokens);
  expect(together).toEqual(alone);
  expect(alone[0]).toEqual(greedy.tokens.slice(1, 25));
  // Prompts that differ and tokens that are not all the story's: the batch mixed different rows.
  expect(new Set(alone.map((t) => t[0])).size).toBeGreaterThan(1);
});

test('prefill in chunks smaller than the prompt on 2 CPU ranks gives the tokens of one-token-at-a-time prefill', async ({ harness }) => {
  const prompt = 'Once upon a time, a little dog named Max wanted to find the biggest bone in the whole town';
  const single = await runGenerate(harness, { ...base, tp: 2, prompt, maxTokens: 32, noPrefillBatch: true });
  const chunked = await runGenerate(harness, { ...base, tp: 2, prompt, maxTokens: 32, maxRows: 5 });
  expect(chunked.prompt_tokens.length).toBeGreaterThan(16);
  expect(chunked.tokens).toEqual(single.tokens);
});

test('3 CPU ranks with 4/2/2 of the 8 query heads give the documented sample', async ({ harness }) => {
  const r = await runGenerate(harness, { ...base, tp: 0, split: [0.5, 0.25, 0.25] });
  expect(r.tp).toBe(3);
  expectDocumentedGreedy(r);
  expect(r.stats.placement!.ranks.map((x) => [x.spec, x.heads])).toEqual([['cpu', [0, 4]], ['cpu', [4, 6]], ['cpu', [6, 8]]]);
});

// An uneven split of 5/3 heads cuts KV group 2 (both ranks hold KV head 2) and sizes the MLP
// and vocabulary slices 5:3. Either kind of rank may be rank 0, the one that carries the residual.
for (const [devices, kinds] of [
  [[{ forceFallbackAdapter: true }, { cpu: true }], ['fallback', 'cpu']],
  [[{ cpu: true }, { forceFallbackAdapter: true }], ['cpu', 'fallback']],
] as const) {
  test(`a ${kinds[0]} rank with 5 heads and a ${kinds[1]} rank with 3 give the documented sample's first 96 tokens`, async ({ harness }) => {
    const r = await runGenerate(harness, { ...base, tp: 0, devices: [...devices], split: [5, 3], maxTokens: 96 });
    expect(r.tp).toBe(2);
    expect(r.tokens).toEqual(greedy.tokens.slice(1, 97));
    const p = r.stats.placement!;
    expect(p.split).toBe('explicit');
    expect(p.ranks.map((x) => [x.spec, x.heads])).toEqual([[kinds[0], [0, 5]], [kinds[1], [5, 8]]]);
    expect(r.stats.ranks.map((x) => x.adapter)).toEqual(kinds.map((k) => (k === 'cpu' ? CPU : 'swiftshader')));
  });
}

/**
 * A synthetic llama2.c model of `shape` mounted on the page server, and the oracle's tokens
 * from BOS sampled at T=1, top-p 0.9, seed 42: random weights give nearly flat logits, whose
 * greedy tokens repeat one token, while sampling them turns any error beyond rounding into
 * other tokens within a few steps.
 */
async function syntheticModel(h: Harness, shape: Parameters<typeof llama2cConfig>[0], tokens: number) {
  const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-cpu-synth-'));
  try {
    const config = llama2cConfig(shape);
    await writeSynthCheckpoint(config, 11, join(dir, 'm.bin'));
    await writeSynthTokenizer(shape.vocabSize, 11, join(dir, 't.bin'));
    const m = loadLlama2c(readArrayBuffer(join(dir, 'm.bin')));
    const sampler = new Sampler(shape.vocabSize, { temperature: 1, topp: 0.9, seed: 42 });
    const want = oracle(m, [1], tokens + 1, (l) => sampler.sample(l)).slice(1);
    const name = `${shape.dim}x${shape.hiddenDim}x${shape.vocabSize}`;
    // The server reads the files at each request: the caller removes `dir` when done.
    return { model: h.server.mountFile(`/files/cpu-synth/${name}.bin`, join(dir, 'm.bin')), tokenizer: h.server.mountFile(`/files/cpu-synth/${name}-tok.bin`, join(dir, 't.bin')), want, dir };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

// Vocabulary 509 and MLP width 130 split 170/170/169 and 44/43/43 over 3 ranks; 6 heads of size
// 10 (not a multiple of 4) over 2 KV heads, so rank 1's heads 2 and 3 cut a KV group; dim 60.
test('3 CPU ranks with uneven vocabulary, MLP and KV splits and head size 10 give the oracle\'s seeded sample, alone, batched, and with a SwiftShader rank among them', async ({ harness }) => {
  const s = await syntheticModel(harness, { dim: 60, hiddenDim: 130, nLayers: 2, nHeads: 6, nKvHeads: 2, vocabSize: 509, seqLen: 64 }, 24);
  try {
    const o = { ...base, model: s.model, tokenizer: s.tokenizer, tp: 3, maxTokens: s.want.length, ignoreEos: true, temperature: 1, topP: 0.9, seed: 42 };
    const alone = await runGenerate(harness, o);
    expect(alone.tokens).toEqual(s.want);
    expect(alone.stats.ranks.map((x) => x.adapter)).toEqual([CPU, CPU, CPU]);
    const together = await harness.page.evaluate(
      ([x, r]) => window.tp.engine.generateConcurrent(x, [...r]),
      [o, [{ prompt: '', maxTokens: s.want.length }, { prompt: '', maxTokens: 8 }, { prompt: '', maxTokens: 13 }]] as const,
    );
    expect('error' in together ? together.error : null).toBeNull();
    expect(together).toEqual([s.want, s.want.slice(0, 8), s.want.slice(0, 13)]);
    const mixed = await runGenerate(harness, { ...o, tp: 0, devices: [{ cpu: true }, { forceFallbackAdapter: true }, { cpu: true }] });
    expect(mixed.tokens).toEqual(s.want);
    expect(mixed.stats.ranks.map((x) => x.adapter)).toEqual([CPU, 'swiftshader', CPU]);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
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
