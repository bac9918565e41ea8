/**
 * Harness entry points for the engine: what the CLI's `generate`, the benchmarks and the e2e
 * tests call inside the page. Errors come back as `{error}` (serialized with their code), since
 * Playwright would flatten them to a message.
 */
import { createEngine, type Engine } from '../engine/engine.js';
import { serializeError, type SerializedError } from '../errors.js';
import type { PageGenerateOptions, PageGenerateResult } from './types.js';
export type { PageGenerateOptions, PageGenerateResult };

declare global {
  interface Window {
    tpEmit?: (text: string) => void;
  }
}

const engines = new Map<string, Engine>();

/** Loads (or reuses) an engine for this model and degree. */
async function engineFor(o: PageGenerateOptions): Promise<{ engine: Engine; loadMs: number }> {
  const key = `${o.model}|${o.tokenizer}|${o.tp}|${o.maxRows ?? ''}`;
  const cached = engines.get(key);
  if (cached) return { engine: cached, loadMs: 0 };
  const t0 = performance.now();
  const engine = await createEngine({ model: o.model, tokenizer: o.tokenizer, tensorParallel: o.tp, maxRows: o.noPrefillBatch ? 1 : o.maxRows });
  engines.set(key, engine);
  return { engine, loadMs: performance.now() - t0 };
}

export async function generate(o: PageGenerateOptions): Promise<PageGenerateResult | { error: SerializedError }> {
  try {
    const { engine, loadMs } = await engineFor(o);
    await engine.resetStats();
    const promptTokens = engine.encode(o.prompt);
    const tokens: number[] = [];
    let text = '';
    let timings = { load_ms: loadMs, prefill_tokens_per_s: 0, decode_tokens_per_s: 0 };
    for await (const chunk of engine.generateTokens(promptTokens, {
      maxTokens: o.maxTokens, temperature: o.temperature, topP: o.topP, seed: o.seed, ignoreEos: o.ignoreEos,
    })) {
      if (chunk.token >= 0) tokens.push(chunk.token);
      text += chunk.text;
      if (o.stream && chunk.text) window.tpEmit?.(chunk.text);
      if (chunk.stats) {
        timings = { load_ms: loadMs, prefill_tokens_per_s: chunk.stats.prefillTokensPerS, decode_tokens_per_s: chunk.stats.decodeTokensPerS };
      }
    }
    return { prompt_tokens: promptTokens, tokens, text, tp: engine.tensorParallel, timings, stats: await engine.stats() };
  } catch (e) {
    return { error: serializeError(e) };
  }
}

/** Disposes every engine the page created. */
export async function disposeAll(): Promise<void> {
  await Promise.all([...engines.values()].map((e) => e.dispose()));
  engines.clear();
}
