/**
 * `webgpu-tp bench generate`: decode and prefill speed of the real engine in headless Chromium,
 * per TP degree, with where each decode step's time goes.
 */
import { openHarness } from './browser.js';
import { mountInput, runGenerate } from './generate.js';
import type { StepBreakdown } from '../engine/types.js';

export interface BenchGenerateOptions {
  model: string;
  tokenizer: string;
  tp: number[];
  maxTokens: number;
  /** Prompt to prefill (default: a short story opening). */
  prompt?: string;
  /** Collective spin iterations to use (default: the engine's). */
  spin?: number;
}

export interface BenchGenerateResult {
  tp: number;
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
    for (const tp of o.tp) {
      const common = { model, tokenizer, tp, prompt: o.prompt ?? DEFAULT_PROMPT, temperature: 0, topP: 0.9, seed: 1, ignoreEos: true, spin: o.spin };
      // Warm-up: loads the engine and compiles every pipeline; the measured run reuses it.
      const warm = await runGenerate(h, { ...common, maxTokens: 4 });
      const r = await runGenerate(h, { ...common, maxTokens: o.maxTokens });
      const r0 = r.stats.ranks[0]!;
      results.push({
        tp,
        prompt_tokens: r.prompt_tokens.length,
        tokens: r.tokens.length,
        prefill_tokens_per_s: r.timings.prefill_tokens_per_s,
        decode_tokens_per_s: r.timings.decode_tokens_per_s,
        breakdown_ms: r0.breakdown,
        allreduce_roundtrip_ms: r0.allreduceRoundtripMs,
        load_ms: warm.timings.load_ms,
        adapter: r0.adapter,
      });
    }
    return { model: o.model, max_tokens: o.maxTokens, results };
  } finally {
    await h.close();
  }
}
