/**
 * `webgpu-tp bench grammar`: what structured output costs in decode. One engine in headless
 * Chromium decodes greedily with EOS ignored, rounds interleaved (plain, then under a JSON
 * schema); each round's ratio of the two decode rates is taken and the median reported. The
 * mask's own per-token time comes from replaying the constrained run's tokens through a fresh
 * grammar in the same page.
 */
import { parseArgs } from 'node:util';
import { openHarness } from './browser.js';
import { mountInput } from './generate.js';
import { median } from '../collective/bench.js';
import { InvalidArgumentError, reviveError, type SerializedError } from '../errors.js';
import type { PageGenerateOptions } from './page/types.js';
import type { PageGrammarRun, PageMaskCost } from './page/grammar-types.js';
import type { JsonSchema } from '../engine/structured.js';
import { closeSync, openSync, readSync, fstatSync } from 'node:fs';
import { MODEL_HEADER_BYTES, parseModelHeader } from '../model/formats/detect.js';

const USAGE = 'webgpu-tp bench grammar --model PATH --tokenizer PATH [--devices cpu|gpu] [--tp N] [--max-tokens N] [--rounds N] [--json]';

/**
 * A schema no greedy run closes within the budget (at least 16 records), so both runs decode
 * `maxTokens`, through every kind of state: keys, bounded integers, strings, booleans.
 */
export const BENCH_SCHEMA: JsonSchema = {
  type: 'array',
  minItems: 16,
  items: {
    type: 'object',
    properties: { id: { type: 'integer', minimum: 0, maximum: 9999 }, name: { type: 'string', maxLength: 12 }, ok: { type: 'boolean' } },
    required: ['id', 'name', 'ok'],
    additionalProperties: false,
  },
};

export interface BenchGrammarReport {
  model: string;
  devices: string;
  tp: number;
  max_tokens: number;
  rounds: { plain_tokens_per_s: number; grammar_tokens_per_s: number; plain_scheduler_ms: number; grammar_scheduler_ms: number }[];
  /** Median over rounds of grammar / plain decode tokens/s. */
  grammar_vs_plain: number;
  /** Median over rounds of the scheduler's extra main-thread ms per step under the grammar. */
  scheduler_extra_ms: number;
  /** The replay: vocabulary and schema compiled on first use, and prepare + mask per token (median, p90). */
  mask: { setup_ms: number; per_token_ms_median: number; per_token_ms_p90: number; tokens: number };
}

type PageWindow = {
  tp: {
    grammar: {
      grammarRun(o: PageGenerateOptions, schema: JsonSchema | undefined): Promise<PageGrammarRun | { error: SerializedError }>;
      maskCost(tokenizer: string, vocabSize: number, schema: JsonSchema, tokens: number[]): Promise<PageMaskCost | { error: SerializedError }>;
    };
  };
};

/** A llama2.c checkpoint's vocabulary size, from its header. */
function vocabSizeOf(path: string): number {
  const fd = openSync(path, 'r');
  try {
    const head = new Uint8Array(MODEL_HEADER_BYTES);
    const n = readSync(fd, head, 0, head.byteLength, 0);
    return parseModelHeader(head.subarray(0, n), fstatSync(fd).size).config.vocabSize;
  } finally {
    closeSync(fd);
  }
}

function ok<T>(r: T | { error: SerializedError }): T {
  if (r && typeof r === 'object' && 'error' in r) throw reviveError(r.error);
  return r as T;
}

export async function benchGrammar(o: { model: string; tokenizer: string; devices: 'cpu' | 'gpu'; tp: number; maxTokens: number; rounds: number }): Promise<BenchGrammarReport> {
  const vocabSize = vocabSizeOf(o.model);
  const h = await openHarness({ bench: true });
  try {
    const page: PageGenerateOptions = {
      model: mountInput(h, 'model', o.model), tokenizer: mountInput(h, 'tokenizer', o.tokenizer), tp: o.tp, devices: o.devices,
      prompt: 'Once upon a time', maxTokens: o.maxTokens, temperature: 0, topP: 0.9, seed: 1, ignoreEos: true,
    };
    const run = async (schema: JsonSchema | undefined) =>
      ok(await h.page.evaluate(([p, s]) => (window as unknown as PageWindow).tp.grammar.grammarRun(p, s), [page, schema] as const));
    // Warm-up: the load, and the grammar library with its first compile.
    await run(undefined);
    let last = await run(BENCH_SCHEMA);
    const rounds: BenchGrammarReport['rounds'] = [];
    for (let i = 0; i < o.rounds; i++) {
      const plain = await run(undefined);
      last = await run(BENCH_SCHEMA);
      if (last.finishReason !== 'length') throw new Error(`the constrained run closed its JSON after ${last.tokens.length} tokens: raise BENCH_SCHEMA's minItems`);
      rounds.push({ plain_tokens_per_s: plain.decodeTokensPerS, grammar_tokens_per_s: last.decodeTokensPerS, plain_scheduler_ms: plain.schedulerMs, grammar_scheduler_ms: last.schedulerMs });
    }
    const cost = ok(await h.page.evaluate(([t, v, s, tokens]) => (window as unknown as PageWindow).tp.grammar.maskCost(t, v, s, [...tokens]), [page.tokenizer!, vocabSize, BENCH_SCHEMA, last.tokens] as const));
    const sorted = [...cost.perTokenMs].sort((a, b) => a - b);
    return {
      model: o.model, devices: o.devices, tp: o.tp, max_tokens: o.maxTokens, rounds,
      grammar_vs_plain: median(rounds.map((r) => r.grammar_tokens_per_s / r.plain_tokens_per_s)),
      scheduler_extra_ms: median(rounds.map((r) => r.grammar_scheduler_ms - r.plain_scheduler_ms)),
      mask: { setup_ms: cost.compileMs, per_token_ms_median: median(sorted), per_token_ms_p90: sorted[Math.floor(sorted.length * 0.9)]!, tokens: sorted.length },
    };
  } finally {
    await h.close();
  }
}

export async function benchGrammarMain(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      model: { type: 'string' }, tokenizer: { type: 'string' }, devices: { type: 'string', default: 'cpu' }, tp: { type: 'string', default: '1' },
      'max-tokens': { type: 'string', default: '128' }, rounds: { type: 'string', default: '3' }, json: { type: 'boolean', default: false },
    },
  });
  const int = (flag: string, v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`--${flag} must be a whole number ≥ 1; got ${JSON.stringify(v)}`, USAGE);
    return n;
  };
  if (!values.model || !values.tokenizer) throw new InvalidArgumentError('bench grammar needs --model and --tokenizer (a llama2.c model)', USAGE);
  if (values.devices !== 'cpu' && values.devices !== 'gpu') throw new InvalidArgumentError(`--devices is cpu or gpu; got ${values.devices}`, USAGE);
  const r = await benchGrammar({ model: values.model, tokenizer: values.tokenizer, devices: values.devices, tp: int('tp', values.tp!), maxTokens: int('max-tokens', values['max-tokens']!), rounds: int('rounds', values.rounds!) });
  if (values.json) console.log(JSON.stringify(r));
  else {
    const f = (x: number) => x.toFixed(3);
    console.log(`${r.model} on ${r.devices} ranks, TP ${r.tp}, ${r.max_tokens} tokens, ${r.rounds.length} rounds`);
    for (const [i, x] of r.rounds.entries()) console.log(`  round ${i + 1}: plain ${x.plain_tokens_per_s.toFixed(1)} tok/s, grammar ${x.grammar_tokens_per_s.toFixed(1)} tok/s (scheduler ${f(x.plain_scheduler_ms)} → ${f(x.grammar_scheduler_ms)} ms/step)`);
    console.log(`  grammar / plain decode: ${f(r.grammar_vs_plain)} (median of rounds); scheduler +${f(r.scheduler_extra_ms)} ms/step`);
    console.log(`  mask alone: ${f(r.mask.per_token_ms_median)} ms/token median, ${f(r.mask.per_token_ms_p90)} p90 over ${r.mask.tokens}; first use ${r.mask.setup_ms.toFixed(0)} ms`);
  }
  return 0;
}
