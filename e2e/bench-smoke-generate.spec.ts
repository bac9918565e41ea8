import { test, expect } from '@playwright/test';
import { resolve } from 'node:path';
import { benchGenerate } from '../src/cli/bench-generate.js';
import { sharedModelsDir } from '../src/cli/browser.js';

// Smoke pass of `bench generate` so the benchmark never rots: tiny model, few tokens, shape only.
test('bench generate runs and reports every field per TP degree', async () => {
  const r = await benchGenerate({
    model: resolve(sharedModelsDir, 'stories260K.bin'),
    tokenizer: resolve(sharedModelsDir, 'tok512.bin'),
    tp: [1, 2],
    maxTokens: 4,
  });
  expect(r.results.map((x) => x.tp)).toEqual([1, 2]);
  for (const x of r.results) {
    expect(x.tokens).toBe(4);
    for (const k of ['prefill_tokens_per_s', 'decode_tokens_per_s', 'allreduce_roundtrip_ms', 'load_ms'] as const) {
      expect(typeof x[k]).toBe('number');
    }
    expect(Object.keys(x.breakdown_ms).sort()).toEqual(['allreduce_ms', 'compute_ms', 'readback_ms', 'scheduler_ms', 'upload_ms']);
  }
  // At TP=2 the sync points run: their round trips are measured.
  expect(r.results[1]!.allreduce_roundtrip_ms).toBeGreaterThan(0);
});
