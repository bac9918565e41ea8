/**
 * The test page's engine entry points, beside the CLI's (src/cli/page/engine.ts) and on the same
 * pool of loaded engines: loading alone, refused loads, the shard cache, concurrent requests,
 * injected faults and cancellation.
 */
import { createEngine, type EngineOptions } from '../../src/engine/engine.js';
import { clearShardCache } from '../../src/cache/shard-cache.js';
import { injectFault, type Fault } from '../engine/faults.js';
import { serializeError, type SerializedError } from '../../src/errors.js';
import { disposeAll, engineFor, timedConcurrent } from '../../src/cli/page/engine.js';
import type { PageGenerateOptions } from '../../src/cli/page/types.js';
import type { RankShard } from '../../src/engine/types.js';

declare global {
  interface Window {
    /** Installed by e2e init scripts that count GPU work from outside the engine. */
    tpCounts?: { submits(): number };
  }
}

/** Several requests at once on one engine (continuous batching); the tokens of each. */
export async function generateConcurrent(o: PageGenerateOptions, requests: { prompt: string; maxTokens: number }[]): Promise<number[][] | { error: SerializedError }> {
  const r = await timedConcurrent(o, requests);
  return 'error' in r ? r : r.tokens;
}

/** Loads an engine without generating (tests that inspect what loading did). */
export async function load(o: PageGenerateOptions): Promise<{ tp: number; loadMs: number; shards: RankShard[] } | { error: SerializedError }> {
  try {
    const { engine, loadMs } = await engineFor(o);
    return { tp: engine.tensorParallel, loadMs, shards: (await engine.stats()).ranks.map((r) => r.shard) };
  } catch (e) {
    return { error: serializeError(e) };
  }
}

/**
 * `createEngine` on sources built in the page (a Blob, a buffer) and options as given (on GPU
 * ranks unless they name devices, as every test-page engine: gpu-default.ts), then disposed at
 * once: tests of what loading refuses call it and look at the error's `code`.
 */
export async function tryCreate(o: EngineOptions): Promise<{ tp: number } | { error: SerializedError }> {
  try {
    const engine = await createEngine({ ...o, devices: o.devices ?? 'gpu' });
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
