/**
 * Prefill on CPU ranks (issue 23): a prompt of 128 tokens or more prefilled in chunks of 64 rows,
 * which the ranks multiply with the GEMM (src/cpu/gemm.ts), must give the same greedy tokens as
 * the same prompt fed one token a step (the small-m matmul), and as the f32 oracle, at TP 1 and 2.
 * The oracle's top-2 margin at every generated step is checked first, so a match is robust to
 * the GEMM's different rounding order rather than luck.
 */
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import { join } from 'node:path';
import { modelsDir, readArrayBuffer } from '../test-support/fixtures/paths.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { createRunState, forward, generateLoop } from '../src/model/reference.js';
import { LONG_PROMPT } from './page-api.js';

const TOKENS = 24;

const base: PageGenerateOptions = {
  model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 1, devices: 'cpu',
  prompt: LONG_PROMPT, maxTokens: TOKENS, temperature: 0, topP: 0.9, seed: 1,
};

test.describe.configure({ mode: 'serial' });

/** The oracle's tokens after the prompt, and its smallest top-2 logit margin over those steps. */
function oracleRun(prompt: number[]): { tokens: number[]; margin: number } {
  const m = loadLlama2c(readArrayBuffer(join(modelsDir, 'stories260K.bin')));
  const state = createRunState(m.config);
  let margin = Infinity;
  const pick = (l: Float32Array): number => {
    let [a, b] = [-Infinity, -Infinity];
    let best = 0;
    l.forEach((v, i) => {
      if (v > a) [b, a, best] = [a, v, i];
      else if (v > b) b = v;
    });
    margin = Math.min(margin, a - b);
    return best;
  };
  const out = generateLoop(m.config.seqLen, prompt, prompt.length + TOKENS - 1, (t, pos) => forward(m, state, t, pos), pick);
  return { tokens: out.slice(prompt.length), margin };
}

for (const tp of [1, 2]) {
  test(`a 128-token prompt prefilled through the GEMM on ${tp} CPU rank${tp === 1 ? '' : 's'} gives the tokens of one token a step, and the oracle's`, async ({ harness }) => {
    const chunked = await runGenerate(harness, { ...base, tp });
    expect(chunked.prompt_tokens.length).toBeGreaterThanOrEqual(128);
    const stepped = await runGenerate(harness, { ...base, tp, noPrefillBatch: true });
    expect(stepped.prompt_tokens).toEqual(chunked.prompt_tokens);
    const want = oracleRun(chunked.prompt_tokens);
    expect(want.margin).toBeGreaterThan(1e-3);
    expect(want.tokens).toHaveLength(TOKENS);
    expect(chunked.tokens).toEqual(want.tokens);
    expect(stepped.tokens).toEqual(want.tokens);
  });
}
