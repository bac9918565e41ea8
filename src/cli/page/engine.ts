/**
 * The page's engines: what the CLI's `generate` and `bench generate` call inside the page, and
 * the pool of loaded engines that the test page's entry points share. Errors
 * come back as `{error}` (serialized with their code), since Playwright would flatten them to
 * a message.
 */
import { createEngine, type Engine } from '../../engine/engine.js';
import { serializeError, type SerializedError } from '../../errors.js';
import type { PageGenerateOptions, PageGenerateResult, PageConcurrentResult } from './types.js';
import type { EngineStats } from '../../engine/types.js';
import { decodeWindow } from './decode-window.js';

declare global {
  interface Window {
    tpEmit?: (text: string) => void;
  }
}

/**
 * Engines reused while the same model, degree and rows are asked for, most recent last. One at
 * a time keeps memory bounded; a benchmark that interleaves TP degrees keeps one per degree
 * (`keepEngines`), so that each round measures the same loaded engines instead of reloading.
 */
const engines: { key: string; engine: Engine }[] = [];

export async function engineFor(o: PageGenerateOptions): Promise<{ engine: Engine; loadMs: number }> {
  const maxRows = o.noPrefillBatch ? 1 : o.maxRows;
  const key = JSON.stringify([o.model, o.tokenizer, o.tp, o.devices, o.split, maxRows, o.spin, o.cache, o.maxBatch, o.timeoutMs, o.profile, o.weightOnly, o.tabs, o.modelAsBlob, o.runqExact, o.int8Activations, o.kvCache]);
  const keep = Math.max(1, o.keepEngines ?? 1);
  const hit = engines.findIndex((e) => e.key === key);
  const found = hit >= 0 ? engines.splice(hit, 1)[0] : undefined;
  // Room for this one (found or about to load): the least recently used go first.
  while (engines.length >= keep) await engines.shift()!.engine.dispose();
  if (found) {
    engines.push(found);
    return { engine: found.engine, loadMs: 0 };
  }
  const t0 = performance.now();
  const model = o.modelAsBlob && typeof o.model === 'string' ? await (await fetch(o.model)).blob() : o.model;
  // The CLI's "gpu" passes through as is: placement names it if it does not take it.
  const devices = o.devices;
  const engine = await createEngine({ model, tokenizer: o.tokenizer, tensorParallel: o.tp || undefined, devices, split: o.split, maxRows, spin: o.spin, cache: o.cache, maxBatch: o.maxBatch, timeoutMs: o.timeoutMs, profile: o.profile, weightOnly: o.weightOnly, int8Activations: o.int8Activations, runqExact: o.runqExact, kvCache: o.kvCache, tabs: o.tabs,
    onProgress: (p) => {
      if (p.loadedBytes === p.totalBytes) o.onProgressLog?.push({ rank: p.rank, fromCache: p.fromCache });
    },
  });
  engines.push({ key, engine });
  return { engine, loadMs: performance.now() - t0 };
}

export async function generate(o: PageGenerateOptions): Promise<PageGenerateResult | { error: SerializedError }> {
  try {
    const { engine, loadMs } = await engineFor(o);
    await engine.resetStats();
    const promptTokens = o.chat ? engine.encodeChat([{ role: 'user', content: o.prompt }]) : engine.encode(o.prompt);
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

/**
 * Runs `requests` at once and times their decode together while every stream decodes: from the
 * step that gives the last stream its first token to the step that gives the first stream its
 * last one. Prompts are prefilled in arrival order, a chunk of rows per step, so the first
 * streams start decoding steps before the last and finish steps before it; counting on to the
 * last token would mix in the steps where the batch runs down (8 rows, then 7, …, then 1). If
 * no step has every stream decoding (streams too short for their staggered starts), the window
 * runs to the last token. The window is read off the tokens' arrival times once every stream is
 * done (`decodeWindow`), so its start's time and its counts are the same step's however late the
 * page runs. The stats are reset in the start step's turn of the event loop and read in the end
 * step's; ranks apply either between two of their steps, so their per-step means may take in one
 * step more or less at either end.
 */
export async function timedConcurrent(
  o: PageGenerateOptions, requests: { prompt: string; maxTokens: number }[],
): Promise<PageConcurrentResult | { error: SerializedError }> {
  try {
    const { engine } = await engineFor(o);
    const got = requests.map(() => [] as number[]);
    const arrivals = requests.map((): { tokens: number[]; done?: number } => ({ tokens: [] }));
    let firsts = 0;
    let reset: Promise<void> | undefined;
    let atEnd: Promise<EngineStats> | undefined;
    await Promise.all(
      requests.map(async (r, i) => {
        for await (const c of engine.generate(r.prompt, { maxTokens: r.maxTokens, temperature: o.temperature, topP: o.topP, seed: o.seed, ignoreEos: o.ignoreEos })) {
          if (c.done) {
            arrivals[i]!.done = performance.now();
            if (reset && !atEnd) atEnd = engine.stats();
            continue;
          }
          if (c.token < 0) continue;
          got[i]!.push(c.token);
          arrivals[i]!.tokens.push(performance.now());
          if (got[i]!.length === 1 && ++firsts === requests.length) reset = engine.resetStats();
        }
      }),
    );
    await reset;
    const w = decodeWindow(arrivals);
    const ended = atEnd && (await atEnd);
    return {
      tokens: got, promptTokens: engine.encode(requests[0]?.prompt ?? '').length, decodeMs: w.decodeMs, decodeTokens: w.decodeTokens,
      // A window that ran to the last token reads the stats there too.
      stats: ended && w.everyStream ? ended : await engine.stats(),
    };
  } catch (e) {
    return { error: serializeError(e) };
  }
}

/** Disposes every engine the page created. */
export async function disposeAll(): Promise<void> {
  const all = engines.splice(0);
  for (const e of all) await e.engine.dispose();
}
