/**
 * runq.c bit for bit (`runqExact`, issue 23): stories260K-q8 W8A8 greedy must give runq.c's
 * tokens and text (gcc -O3, glibc; test-support/fixtures/stories260K-q8-runq.json). "The cat"
 * parts from runq.c at position 66 (top-2 margin 0.016) unless the RoPE tables are glibc's cosf
 * and sinf to the bit (src/model/glibc-trig.ts).
 */
import { readFileSync } from 'node:fs';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';

interface RunqRun { prompt: string; promptTokens: number; tokens: number[]; text: string }
const runq = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-q8-runq.json', import.meta.url), 'utf8')) as { steps: number; runs: RunqRun[] };
const run = (prompt: string): RunqRun => runq.runs.find((x) => x.prompt === prompt)!;

const base: PageGenerateOptions = {
  model: '/models/stories260K-q8.bin', tokenizer: '/models/tok512.bin', tp: 1,
  prompt: '', maxTokens: 1, temperature: 0, topP: 0.9, seed: 1,
};

test.describe.configure({ mode: 'serial' });

for (const tp of [1, 2]) {
  test(`"The cat" on ${tp} GPU rank${tp === 1 ? '' : 's'}: runq.c's tokens and text`, async ({ harness }) => {
    const want = run('The cat');
    const r = await runGenerate(harness, { ...base, tp, devices: 'gpu', prompt: want.prompt, maxTokens: runq.steps + 1 - want.promptTokens });
    expect(r.tp).toBe(tp);
    expect(r.prompt_tokens.length).toBe(want.promptTokens);
    expect(r.tokens.slice(0, want.tokens.length)).toEqual(want.tokens);
    expect(want.prompt + r.text).toBe(want.text);
  });
}
