import { test, expect } from './fixtures.js';
import { expectDocumentedGreedy, expectGreedyStart, greedy } from './greedy.js';
import { readFileSync } from 'node:fs';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';

// The oracle's seeded tokens (src/model/reference.ts, checked against llama2.c's run.c): BOS first.
const seeded = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-seeded.json', import.meta.url), 'utf8')) as { tokens: number[]; text: string };

const base: PageGenerateOptions = {
  model: '/models/stories260K.bin',
  tokenizer: '/models/tok512.bin',
  tp: 1,
  prompt: '',
  maxTokens: 256,
  temperature: 0,
  topP: 0.9,
  seed: 1,
};

test.describe.configure({ mode: 'serial' });

// The whole 256-token sample at TP 1 and 2; at TP 4 its first 32 tokens, at TP 8 16 (each degree's
// whole sample is e2e/cpu-ranks.spec.ts's, on CPU ranks). Each degree's seeded test, and TP 2's
// concurrent and batched-prefill ones, run right after its greedy one, on the engine that one loaded.
const GPU_STEPS: Record<number, number> = { 1: 256, 2: 256, 4: 32, 8: 16 };
for (const tp of [1, 2, 4, 8]) {
  const steps = GPU_STEPS[tp]!;
  test(`greedy stories260K at TP=${tp} is llama2.c's documented sample${steps < 256 ? `'s first ${steps} tokens` : ''}, token for token`, async ({ harness }) => {
    const r = await runGenerate(harness, { ...base, tp, maxTokens: steps });
    expect(r.tp).toBe(tp);
    if (steps === 256) expectDocumentedGreedy(r);
    else expectGreedyStart(r, steps);
  });

  if (tp > 2) continue;
  test(`seeded sample (T=1.0, top-p 0.9, seed 133742) at TP=${tp} is llama2.c's`, async ({ harness }) => {
    const r = await runGenerate(harness, { ...base, tp, temperature: 1.0, topP: 0.9, seed: 133742 });
    expect(r.tokens).toEqual(seeded.tokens.slice(1));
    expect(r.text.startsWith('Once upon a time, there was a little boy named Timmy. Timmy loved to play with his toys and eat sandwiches.')).toBe(true);
  });

  if (tp === 2) {
    test('concurrent requests are batched on TP=2 and each gets the tokens it gets alone', async ({ harness }) => {
      const requests = [
        { prompt: '', maxTokens: 24 },
        { prompt: 'Lily and Ben went to the park', maxTokens: 16 },
        { prompt: 'The cat sat', maxTokens: 20 },
      ];
      const together = await harness.page.evaluate(([o, r]) => window.tp.engine.generateConcurrent(o, r), [{ ...base, tp: 2 }, requests] as const);
      expect('error' in together ? together.error : null).toBeNull();
      const alone: number[][] = [];
      for (const r of requests) alone.push((await runGenerate(harness, { ...base, tp: 2, prompt: r.prompt, maxTokens: r.maxTokens })).tokens);
      expect(together).toEqual(alone);
      expect(alone[0]).toEqual(greedy.tokens.slice(1, 25));
    });

    test('batched prefill gives the same tokens as feeding the prompt one token at a time', async ({ harness }) => {
      const prompt = 'Once upon a time, a little dog named Max wanted to find the biggest bone in the whole town';
      // The default 64 rows: one step, on the engine the tests above loaded. Every decode step
      // attends over the whole prompt's KV, so 16 steps see any row the prefill got wrong.
      const batched = await runGenerate(harness, { ...base, tp: 2, prompt, maxTokens: 16 });
      const single = await runGenerate(harness, { ...base, tp: 2, prompt, maxTokens: 16, noPrefillBatch: true });
      expect(batched.prompt_tokens.length).toBeGreaterThan(16);
      expect(batched.tokens).toEqual(single.tokens);
      // Prefill in chunks smaller than the prompt crosses chunk boundaries too.
      const chunked = await runGenerate(harness, { ...base, tp: 2, prompt, maxTokens: 16, maxRows: 5 });
      expect(chunked.tokens).toEqual(single.tokens);
    });
  }
}

test('an invalid degree raises PlanError naming the valid ones', async ({ harness }) => {
  const err = await runGenerate(harness, { ...base, tp: 3 }).then(
    () => null,
    (e: Error & { code?: string }) => e,
  );
  expect(err).not.toBeNull();
  expect(err!.name).toBe('PlanError');
  expect(err!.code).toBe('PLAN');
  expect(err!.message).toContain('1, 2, 4 or 8');
});
