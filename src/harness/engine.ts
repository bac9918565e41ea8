/**
 * Harness entry points for the engine: what the CLI's `generate`, the benchmarks and the e2e
 * tests call inside the page. Errors come back as `{error}` (serialized with their code), since
 * Playwright would flatten them to a message.
 */
import { createEngine, type Engine } from '../engine/engine.js';
import { clearShardCache } from '../cache/shard-cache.js';
import { serializeError, type SerializedError } from '../errors.js';
import type { PageGenerateOptions, PageGenerateResult, PageConcurrentResult } from './types.js';
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
  const key = JSON.stringify([o.model, o.tokenizer, o.tp, maxRows, o.spin, o.cache, o.maxBatch, o.weightOnly]);
  if (current?.key === key) return { engine: current.engine, loadMs: 0 };
  await disposeAll();
  const t0 = performance.now();
  const engine = await createEngine({ model: o.model, tokenizer: o.tokenizer, tensorParallel: o.tp, maxRows, spin: o.spin, cache: o.cache, maxBatch: o.maxBatch, weightOnly: o.weightOnly,
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

/** Several requests at once on one engine (continuous batching); the tokens of each. */
export async function generateConcurrent(o: PageGenerateOptions, requests: { prompt: string; maxTokens: number }[]): Promise<number[][] | { error: SerializedError }> {
  const r = await timedConcurrent(o, requests);
  return 'error' in r ? r : r.tokens;
}

/**
 * Runs `requests` at once and times their decode together: from the moment every stream has
 * its first token to the last token of all (the batch's steady state).
 */
export async function timedConcurrent(
  o: PageGenerateOptions, requests: { prompt: string; maxTokens: number }[],
): Promise<PageConcurrentResult | { error: SerializedError }> {
  try {
    const { engine } = await engineFor(o);
    let firsts = 0;
    let tStart = 0;
    let decodeTokens = 0;
    const tokens = await Promise.all(
      requests.map(async (r) => {
        const tokens: number[] = [];
        for await (const c of engine.generate(r.prompt, { maxTokens: r.maxTokens, temperature: o.temperature, topP: o.topP, seed: o.seed, ignoreEos: o.ignoreEos })) {
          if (c.token < 0) continue;
          tokens.push(c.token);
          if (tokens.length === 1 && ++firsts === requests.length) {
            tStart = performance.now();
            await engine.resetStats();
          } else if (firsts === requests.length) decodeTokens++;
        }
        return tokens;
      }),
    );
    return { tokens, decodeMs: performance.now() - tStart, decodeTokens, stats: await engine.stats() };
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
