/**
 * A request's sampling and logprobs options, checked and given their defaults. Every bad value
 * is an `InvalidArgumentError` naming the option (with its OpenAI / llama.cpp spelling) and its
 * valid range.
 */
import { InvalidArgumentError } from '../errors.js';
import type { GenerateOptions } from './types.js';
import type { SamplingParams } from './sampling.js';

/** llama.cpp's `repeat_last_n` default. */
export const DEFAULT_PENALTY_LAST_N = 64;
/** OpenAI's `top_logprobs` maximum. */
export const MAX_TOP_LOGPROBS = 20;

function bad(option: string, range: string, got: unknown, remedy: string): never {
  throw new InvalidArgumentError(`${option} must be ${range}, got ${typeof got === 'number' ? got : JSON.stringify(got)}`, remedy);
}

function inRange(v: number | undefined, option: string, lo: number, hi: number, remedy: string): void {
  if (v !== undefined && !(typeof v === 'number' && v >= lo && v <= hi)) bad(option, `in [${lo}, ${hi}]`, v, remedy);
}

function wholeAtLeast(v: number | undefined, option: string, lo: number, remedy: string): void {
  if (v !== undefined && !(Number.isInteger(v) && v >= lo)) bad(option, `a whole number ≥ ${lo}`, v, remedy);
}

/** The sampler's parameters for `opts` over a vocabulary of `vocabSize` tokens. */
export function resolveSampling(opts: GenerateOptions, vocabSize: number | undefined): SamplingParams {
  const temperature = opts.temperature ?? 1.0;
  if (!(temperature >= 0)) throw new InvalidArgumentError(`temperature must be ≥ 0, got ${temperature}`, 'Pass 0 for greedy decoding, or a positive temperature');
  // run.c quietly resets a top-p outside [0, 1] to 0.9; a caller here gets told instead.
  if (opts.topP !== undefined && !(opts.topP >= 0 && opts.topP <= 1)) {
    throw new InvalidArgumentError(`topP must be in [0, 1], got ${opts.topP}`, 'Pass a cutoff in (0, 1), or 0 or 1 to sample from the whole distribution');
  }
  wholeAtLeast(opts.topK, 'topK (top_k)', 0, 'Pass how many of the most likely tokens to keep, or 0 for all of them');
  inRange(opts.minP, 'minP (min_p)', 0, 1, 'Pass a fraction of the most likely token\'s probability, or 0 to turn min-p off');
  const rep = opts.repetitionPenalty;
  if (rep !== undefined && !(rep > 0 && Number.isFinite(rep))) {
    bad('repetitionPenalty (repeat_penalty)', 'a finite number > 0', rep, 'Pass 1 for no penalty, or e.g. 1.1 to discourage repeats');
  }
  inRange(opts.presencePenalty, 'presencePenalty (presence_penalty)', -2, 2, 'Pass 0 for no penalty');
  inRange(opts.frequencyPenalty, 'frequencyPenalty (frequency_penalty)', -2, 2, 'Pass 0 for no penalty');
  const lastN = opts.penaltyLastN;
  if (lastN !== undefined && !(Number.isInteger(lastN) && lastN >= -1)) {
    bad('penaltyLastN (repeat_last_n)', 'a whole number ≥ -1', lastN, `Pass how many of the latest tokens the penalties count (default ${DEFAULT_PENALTY_LAST_N}), 0 for none or -1 for all`);
  }
  return {
    temperature,
    topP: opts.topP ?? 0.9,
    topK: opts.topK ?? 0,
    minP: opts.minP ?? 0,
    repetitionPenalty: rep ?? 1,
    presencePenalty: opts.presencePenalty ?? 0,
    frequencyPenalty: opts.frequencyPenalty ?? 0,
    penaltyLastN: lastN ?? DEFAULT_PENALTY_LAST_N,
    logitBias: resolveLogitBias(opts.logitBias, vocabSize),
    seed: opts.seed ?? Date.now(),
  };
}

function resolveLogitBias(bias: GenerateOptions['logitBias'], vocabSize: number | undefined): Map<number, number> {
  const out = new Map<number, number>();
  if (bias === undefined) return out;
  if (typeof bias !== 'object' || bias === null) bad('logitBias (logit_bias)', 'an object from token ids to biases', bias, 'Pass e.g. { 42: -100 } to ban token 42');
  for (const [key, value] of Object.entries(bias)) {
    const t = Number(key);
    if (!Number.isInteger(t) || t < 0 || (vocabSize !== undefined && t >= vocabSize)) {
      bad('a logitBias (logit_bias) key', `a token id in [0, ${vocabSize ?? 'vocabSize'})`, key, 'Use ids from engine.encode() or this model\'s tokenizer');
    }
    inRange(value, `logitBias[${key}] (logit_bias)`, -100, 100, 'Pass -100 to ban a token, 100 to all but force it');
    out.set(t, value);
  }
  return out;
}

/** How many top tokens each chunk's logprobs list: undefined when logprobs are off. */
export function resolveTopLogprobs(opts: GenerateOptions): number | undefined {
  wholeAtLeast(opts.topLogprobs, 'topLogprobs (top_logprobs)', 0, `Pass 0..${MAX_TOP_LOGPROBS}`);
  if (opts.topLogprobs !== undefined && opts.topLogprobs > MAX_TOP_LOGPROBS) bad('topLogprobs (top_logprobs)', `at most ${MAX_TOP_LOGPROBS}`, opts.topLogprobs, `Pass 0..${MAX_TOP_LOGPROBS}`);
  return opts.logprobs || opts.topLogprobs !== undefined ? (opts.topLogprobs ?? 0) : undefined;
}
