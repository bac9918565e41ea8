/**
 * `webgpu-tp bench generate`: decode and prefill speed of the real engine in headless Chromium,
 * per TP degree, with where each decode step's time goes.
 */
import { openHarness } from './browser.js';
import { mountInput, runGenerate } from './generate.js';
import type { StepBreakdown } from '../engine/types.js';
import { reviveError, type SerializedError } from '../errors.js';
import type { PageConcurrentResult, PageGenerateOptions } from '../harness/types.js';

type PageWindow = {
  tp: { engine: { timedConcurrent(o: PageGenerateOptions, r: { prompt: string; maxTokens: number }[]): Promise<PageConcurrentResult | { error: SerializedError }> } };
};

export interface BenchGenerateOptions {
  model: string;
  tokenizer: string;
  tp: number[];
  maxTokens: number;
  /** Prompt to prefill (default: a short story opening). */
  prompt?: string;
  /** Collective spin iterations to use (default: the engine's). */
  spin?: number;
  /** Concurrent streams per run (continuous batching); default [1]. */
  batch?: number[];
}

export interface BenchGenerateResult {
  tp: number;
  batch: number;
  /** Decode tokens/s of all streams together. */
  aggregate_tokens_per_s: number;
  prompt_tokens: number;
  tokens: number;
  prefill_tokens_per_s: number;
  decode_tokens_per_s: number;
  /** Means per decode step, rank 0's view (ms). */
  breakdown_ms: StepBreakdown;
  /** Median ms from one sync point's readback start to its upload done (rank 0). */
  allreduce_roundtrip_ms: number;
  load_ms: number;
  adapter: string;
}

export interface BenchGenerateReport {
  model: string;
  max_tokens: number;
  results: BenchGenerateResult[];
}

const DEFAULT_PROMPT = 'Once upon a time, there was a little girl who loved to play in the park with her friends.';

export async function benchGenerate(o: BenchGenerateOptions): Promise<BenchGenerateReport> {
  const h = await openHarness({ bench: true });
  try {
    const model = mountInput(h, 'model', o.model);
    const tokenizer = mountInput(h, 'tokenizer', o.tokenizer);
    const results: BenchGenerateResult[] = [];
    const batches = o.batch ?? [1];
    const maxBatch = Math.max(...batches);
    for (const tp of o.tp) {
      const prompt = o.prompt ?? DEFAULT_PROMPT;
      const common = { model, tokenizer, tp, prompt, temperature: 0, topP: 0.9, seed: 1, ignoreEos: true, spin: o.spin, maxBatch };
      // Warm-up: loads the engine and compiles every pipeline; the measured runs reuse it.
      const warm = await runGenerate(h, { ...common, maxTokens: 4 });
      for (const batch of batches) {
        if (batch === 1) {
          const r = await runGenerate(h, { ...common, maxTokens: o.maxTokens });
          const r0 = r.stats.ranks[0]!;
          results.push({
            tp, batch, aggregate_tokens_per_s: r.timings.decode_tokens_per_s,
            prompt_tokens: r.prompt_tokens.length, tokens: r.tokens.length,
            prefill_tokens_per_s: r.timings.prefill_tokens_per_s, decode_tokens_per_s: r.timings.decode_tokens_per_s,
            breakdown_ms: r0.breakdown, allreduce_roundtrip_ms: r0.allreduceRoundtripMs, load_ms: warm.timings.load_ms, adapter: r0.adapter,
          });
          continue;
        }
        const requests = Array.from({ length: batch }, () => ({ prompt, maxTokens: o.maxTokens }));
        const r = await h.page.evaluate(([opts, reqs]) => (window as unknown as PageWindow).tp.engine.timedConcurrent(opts, [...reqs]), [{ ...common, maxTokens: o.maxTokens }, requests] as const);
        if ('error' in r) throw reviveError(r.error);
        const aggregate = r.decodeTokens / Math.max(r.decodeMs / 1000, 1e-9);
        const r0 = r.stats.ranks[0]!;
        results.push({
          tp, batch, aggregate_tokens_per_s: aggregate,
          prompt_tokens: prompt.length, tokens: r.tokens.reduce((a, t) => a + t.length, 0),
          prefill_tokens_per_s: 0, decode_tokens_per_s: aggregate / batch,
          breakdown_ms: r0.breakdown, allreduce_roundtrip_ms: r0.allreduceRoundtripMs, load_ms: warm.timings.load_ms, adapter: r0.adapter,
        });
      }
    }
    return { model: o.model, max_tokens: o.maxTokens, results };
  } finally {
    await h.close();
  }
}
