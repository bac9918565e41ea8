/**
 * Harness entry points for the engine: what the CLI's `generate`, the benchmarks and the e2e
 * tests call inside the page. Errors come back as `{error}` (serialized with their code), since
 * Playwright would flatten them to a message.
 */
import { createEngine, type Engine } from '../engine/engine.js';
import { clearShardCache } from '../cache/shard-cache.js';
import { serializeError, type SerializedError } from '../errors.js';
import type { PageGenerateOptions, PageGenerateResult } from './types.js';
export type { PageGenerateOptions, PageGenerateResult };

declare global {
  interface Window {
    tpEmit?: (text: string) => void;
  }
}

/** The last engine, reused while the same model, degree and rows are asked for (one at a time keeps memory bounded). */
let current: { key: string; engine: Engine } | undefined;

async function engineFor(o: PageGenerateOptions): Promise<{ engine: Engine; loadMs: number }> {
  const maxRows = o.noPrefillBatch ? 1 : o.maxRows;
  const key = JSON.stringify([o.model, o.tokenizer, o.tp, maxRows, o.spin, o.cache]);
  if (current?.key === key) return { engine: current.engine, loadMs: 0 };
  await disposeAll();
  const t0 = performance.now();
  const engine = await createEngine({ model: o.model, tokenizer: o.tokenizer, tensorParallel: o.tp, maxRows, spin: o.spin, cache: o.cache,
    onProgress: (p) => {
      if (p.loadedBytes === p.totalBytes) o.onProgressLog?.push({ rank: p.rank, fromCache: p.fromCache });
    },
  });
  current = { key, engine };
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
      // Per-step stats are about decode: drop what prefill accumulated once the first token is out.
      if (tokens.length === 1) await engine.resetStats();
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

/** Loads an engine without generating (tests that inspect what loading did). */
export async function load(o: PageGenerateOptions): Promise<{ tp: number; loadMs: number } | { error: SerializedError }> {
  try {
    const { engine, loadMs } = await engineFor(o);
    return { tp: engine.tensorParallel, loadMs };
  } catch (e) {
    return { error: serializeError(e) };
  }
}

/** Empties the shard cache. */
export async function clearCache(): Promise<void> {
  await clearShardCache();
}

/** Disposes every engine the page created. */
export async function disposeAll(): Promise<void> {
  const e = current?.engine;
  current = undefined;
  await e?.dispose();
}
