/**
 * runq.c bit for bit (`runqExact`, issue 23): stories260K-q8 W8A8 greedy must give runq.c's
 * tokens and text (gcc -O3, glibc; test-support/fixtures/stories260K-q8-runq.json) on CPU ranks
 * (workers/cpu-exact.ts) at TP 1, 2 and 4, on GPU ranks, and on a GPU rank beside a CPU rank.
 * "The cat" parts from runq.c at position 66 (top-2 margin 0.016) unless the RoPE tables are
 * glibc's cosf and sinf to the bit (src/model/glibc-trig.ts).
 */
import { readFileSync } from 'node:fs';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions, PageGenerateResult } from '../src/cli/page/types.js';

interface RunqRun { prompt: string; promptTokens: number; tokens: number[]; text: string }
const runq = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-q8-runq.json', import.meta.url), 'utf8')) as { steps: number; runs: RunqRun[] };
const run = (prompt: string): RunqRun => runq.runs.find((x) => x.prompt === prompt)!;

const base: PageGenerateOptions = {
  model: '/models/stories260K-q8.bin', tokenizer: '/models/tok512.bin', tp: 1,
  prompt: '', maxTokens: 1, temperature: 0, topP: 0.9, seed: 1,
};

const CPU = 'CPU (WebAssembly SIMD)';

/** runq.c's `-n 200` run of each prompt (default all), on the engine `o` loads (one load for all of them). */
async function expectRunq(harness: Parameters<typeof runGenerate>[0], o: PageGenerateOptions, prompts = runq.runs.map((x) => x.prompt)): Promise<PageGenerateResult[]> {
  const out: PageGenerateResult[] = [];
  for (const want of prompts.map(run)) {
    const r = await runGenerate(harness, { ...o, prompt: want.prompt, maxTokens: runq.steps + 1 - want.promptTokens });
    expect(r.prompt_tokens.length).toBe(want.promptTokens);
    expect(r.tokens.slice(0, want.tokens.length), JSON.stringify(want.prompt)).toEqual(want.tokens);
    expect(want.prompt + r.text).toBe(want.text);
    out.push(r);
  }
  return out;
}

test.describe.configure({ mode: 'serial' });

for (const tp of [1, 2, 4]) {
  test(`on ${tp} CPU rank${tp === 1 ? '' : 's'}: runq.c's tokens and text for every prompt`, async ({ harness }) => {
    const [r] = await expectRunq(harness, { ...base, tp, devices: 'cpu' });
    expect(r!.tp).toBe(tp);
    expect(r!.stats.ranks.map((x) => [x.adapter, x.precision.weights])).toEqual(Array.from({ length: tp }, () => [CPU, 'q8_0']));
  });
}

// Each kind as rank 0 (which starts every chained sum and carries the residual) and as rank 1.
for (const [devices, adapters] of [
  [[{ forceFallbackAdapter: true }, { cpu: true }], ['swiftshader', CPU]],
  [[{ cpu: true }, { forceFallbackAdapter: true }], [CPU, 'swiftshader']],
] as const) {
  test(`a ${adapters[0]} rank then a ${adapters[1]} rank: runq.c's tokens and text for "The cat"`, async ({ harness }) => {
    const [r] = await expectRunq(harness, { ...base, tp: 0, devices: [...devices] }, ['The cat']);
    expect(r!.stats.ranks.map((x) => x.adapter)).toEqual(adapters);
  });
}

test('auto places W8A8 with runqExact on CPU ranks where the only adapter is a CPU fallback', async ({ harness }) => {
  const r = await runGenerate(harness, { ...base, tp: 'auto', devices: 'auto', prompt: 'The cat', maxTokens: 8 });
  expect(r.stats.placement!.reason).toContain('no GPU');
  expect(r.stats.ranks.map((x) => x.adapter)).toEqual(Array.from({ length: r.tp }, () => CPU));
  expect(r.tokens).toEqual(run('The cat').tokens.slice(0, 8));
});

for (const tp of [1, 2]) {
  test(`"The cat" on ${tp} GPU rank${tp === 1 ? '' : 's'}: runq.c's tokens and text`, async ({ harness }) => {
    const [r] = await expectRunq(harness, { ...base, tp, devices: 'gpu' }, ['The cat']);
    expect(r!.tp).toBe(tp);
    expect(r!.stats.ranks.map((x) => x.adapter)).toEqual(Array.from({ length: tp }, () => 'swiftshader'));
  });
}
