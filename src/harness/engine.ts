/**
 * Harness entry points for the engine: what the CLI's `generate`, the benchmarks and the e2e
 * tests call inside the page. Errors come back as `{error}` (serialized with their code), since
 * Playwright would flatten them to a message.
 */
import { createEngine, type Engine, type EngineOptions } from '../engine/engine.js';
import { clearShardCache } from '../cache/shard-cache.js';
import { injectFault, type Fault } from '../engine/fault-injection.js';
import { serializeError, type SerializedError } from '../errors.js';
import type { PageGenerateOptions, PageGenerateResult, PageConcurrentResult } from './types.js';
import type { EngineStats } from '../engine/types.js';
export type { PageGenerateOptions, PageGenerateResult };

declare global {
  interface Window {
    tpEmit?: (text: string) => void;
    /** Installed by e2e init scripts that count GPU work from outside the engine. */
    tpCounts?: { submits(): number };
  }
}

/**
 * Engines reused while the same model, degree and rows are asked for, most recent last. One at
 * a time keeps memory bounded; a benchmark that interleaves TP degrees keeps one per degree
 * (`keepEngines`), so that each round measures the same loaded engines instead of reloading.
 */
const engines: { key: string; engine: Engine }[] = [];

async function engineFor(o: PageGenerateOptions): Promise<{ engine: Engine; loadMs: number }> {
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
  const engine = await createEngine({ model, tokenizer: o.tokenizer, tensorParallel: o.tp || undefined, devices: o.devices, split: o.split, maxRows, spin: o.spin, cache: o.cache, maxBatch: o.maxBatch, timeoutMs: o.timeoutMs, profile: o.profile, weightOnly: o.weightOnly, int8Activations: o.int8Activations, runqExact: o.runqExact, kvCache: o.kvCache, tabs: o.tabs,
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

/** Several requests at once on one engine (continuous batching); the tokens of each. */
export async function generateConcurrent(o: PageGenerateOptions, requests: { prompt: string; maxTokens: number }[]): Promise<number[][] | { error: SerializedError }> {
  const r = await timedConcurrent(o, requests);
  return 'error' in r ? r : r.tokens;
}

/**
 * Runs `requests` at once and times their decode together while every stream decodes: from the
 * step that gives the last stream its first token to the step that gives the first stream its
 * last one. Prompts are prefilled in arrival order, a chunk of rows per step, so the first
 * streams start decoding steps before the last and finish steps before it; counting on to the
 * last token would mix in the steps where the batch runs down (8 rows, then 7, …, then 1). If
 * no step has every stream decoding (streams too short for their staggered starts), the window
 * runs to the last token. The stats cover the same window.
 */
export async function timedConcurrent(
  o: PageGenerateOptions, requests: { prompt: string; maxTokens: number }[],
): Promise<PageConcurrentResult | { error: SerializedError }> {
  try {
    const { engine } = await engineFor(o);
    const got = requests.map(() => [] as number[]);
    const counts = () => got.map((g) => g.length);
    // A step's chunks reach every stream in the same turn of the event loop, so after a macrotask
    // each stream holds its tokens of that step and none of the next (steps take ≥ milliseconds).
    const afterStep = () => new Promise((r) => setTimeout(r, 0));
    let firsts = 0;
    let start: { t: number; counts: number[] } | undefined;
    let end: { t: number; counts?: number[]; stats?: Promise<EngineStats> } | undefined;
    let tLast = 0;
    await Promise.all(
      requests.map(async (r, i) => {
        for await (const c of engine.generate(r.prompt, { maxTokens: r.maxTokens, temperature: o.temperature, topP: o.topP, seed: o.seed, ignoreEos: o.ignoreEos })) {
          if (c.done) {
            if (start && !end) {
              end = { t: performance.now() };
              end.stats = engine.stats();
              await afterStep();
              end.counts = counts();
            }
            continue;
          }
          if (c.token < 0) continue;
          got[i]!.push(c.token);
          tLast = performance.now();
          if (got[i]!.length === 1 && ++firsts === requests.length) {
            const t = performance.now();
            await afterStep();
            start = { t, counts: counts() };
            await engine.resetStats();
          }
        }
      }),
    );
    const until = end?.counts ? { t: end.t, counts: end.counts, stats: end.stats! } : { t: tLast, counts: counts(), stats: engine.stats() };
    const decodeTokens = until.counts.reduce((n, c, i) => n + c - start!.counts[i]!, 0);
    return {
      tokens: got, promptTokens: engine.encode(requests[0]?.prompt ?? '').length, decodeMs: until.t - start!.t, decodeTokens, stats: await until.stats,
    };
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

/**
 * `createEngine` on sources built in the page (a Blob, a buffer) and options as given, then
 * disposed at once: tests of what loading refuses call it and look at the error's `code`.
 */
export async function tryCreate(o: EngineOptions): Promise<{ tp: number } | { error: SerializedError }> {
  try {
    const engine = await createEngine(o);
    const tp = engine.tensorParallel;
    await engine.dispose();
    return { tp };
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
  const all = engines.splice(0);
  for (const e of all) await e.engine.dispose();
}

/** How one request of a fault or soak run ended: its tokens, or its error with its code. */
export type PageOutcome = { tokens: number[] } | { tokens: number[]; error: SerializedError };

/** Consumes one stream; an error ends it with what came before. `onToken` sees each token count. */
async function consume(stream: AsyncIterable<{ token: number }>, onToken?: (n: number) => void | Promise<void>): Promise<PageOutcome> {
  const tokens: number[] = [];
  try {
    for await (const c of stream) {
      if (c.token < 0) continue;
      tokens.push(c.token);
      await onToken?.(tokens.length);
    }
    return { tokens };
  } catch (e) {
    return { tokens, error: serializeError(e) };
  }
}

/**
 * Starts `requests` at once (greedy; those beyond maxBatch queue) and, once the first has
 * `afterTokens` tokens, injects `fault` into the engine. Returns how each request ended.
 */
export async function generateWithFault(
  o: PageGenerateOptions, requests: { prompt: string; maxTokens: number }[], fault: Fault, afterTokens: number,
): Promise<PageOutcome[] | { error: SerializedError }> {
  try {
    const { engine } = await engineFor(o);
    let injected: Promise<void> | undefined;
    const runs = requests.map((r, i) =>
      consume(engine.generate(r.prompt, { maxTokens: r.maxTokens, temperature: 0 }), (n) => {
        if (i === 0 && n === afterTokens) injected = injectFault(engine, fault);
      }),
    );
    const out = await Promise.all(runs);
    await injected;
    return out;
  } catch (e) {
    return { error: serializeError(e) };
  }
}

/**
 * Runs token-id prompts (greedy) one after another, or all at once (`concurrent`). `starts[i]`
 * is the order in which request i produced its first token (a page-wide counter).
 */
export async function runRequests(
  o: PageGenerateOptions, requests: { tokens: number[]; maxTokens: number }[], concurrent: boolean,
): Promise<{ outcomes: PageOutcome[]; starts: number[] } | { error: SerializedError }> {
  try {
    const { engine } = await engineFor(o);
    let counter = 0;
    const starts = requests.map(() => -1);
    const run = (r: { tokens: number[]; maxTokens: number }, i: number) =>
      consume(engine.generateTokens(r.tokens, { maxTokens: r.maxTokens, temperature: 0 }), (n) => {
        if (n === 1) starts[i] = counter++;
      });
    const outcomes: PageOutcome[] = [];
    if (concurrent) outcomes.push(...(await Promise.all(requests.map(run))));
    else for (let i = 0; i < requests.length; i++) outcomes.push(await run(requests[i]!, i));
    return { outcomes, starts };
  } catch (e) {
    return { error: serializeError(e) };
  }
}

/**
 * Cancels one greedy request of `prompt`: `abort` its AbortSignal or `dispose` the engine, once
 * it has `afterTokens` tokens (0: as soon as a rank has submitted GPU work for it, i.e. during
 * prefill, as counted by the test's init script in `window.tpCounts`). Returns how it ended.
 */
export async function cancelDuring(
  o: PageGenerateOptions, prompt: string, how: 'abort' | 'dispose', afterTokens: number,
): Promise<PageOutcome | { error: SerializedError }> {
  const submitted = () => {
    if (!window.tpCounts) throw new Error('cancelDuring(…, 0) needs the counting init script (window.tpCounts)');
    return window.tpCounts.submits();
  };
  try {
    const { engine } = await engineFor(o);
    const ac = new AbortController();
    const cancel = async () => {
      if (how === 'abort') ac.abort();
      else await disposeAll();
    };
    const stream = engine.generate(prompt, { maxTokens: o.maxTokens, temperature: 0, signal: ac.signal });
    let cancelled: Promise<void> | undefined;
    if (afterTokens === 0) {
      // Prefill has started once the workers submit GPU work after the request.
      const before = submitted();
      cancelled = (async () => {
        while (submitted() === before) await new Promise((r) => setTimeout(r, 1));
        await cancel();
      })();
    }
    const out = await consume(stream, async (n) => {
      if (n === afterTokens) cancelled = cancel();
    });
    await cancelled;
    return out;
  } catch (e) {
    return { error: serializeError(e) };
  }
}
