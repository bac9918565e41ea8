/**
 * The sampling parameters of the OpenAI shapes (OpenAI's names, plus llama.cpp server's
 * `top_k`, `min_p`, `repeat_penalty` and `repeat_last_n`) as `GenerateOptions`, and token
 * strings for their `logprobs`.
 */
import type { GenerateChunk, GenerateOptions } from './types.js';
import { resolveSampling, resolveTopLogprobs } from './sampling-options.js';
import { resolveResponseFormat, type ResponseFormat } from './structured.js';

/** Sampling parameters shared by `completions.create` and `chat.completions.create`. */
export interface OpenAiSamplingParams {
  temperature?: number;
  top_p?: number;
  seed?: number;
  /** OpenAI's, in [-2, 2]: see `GenerateOptions.presencePenalty`. */
  presence_penalty?: number;
  /** OpenAI's, in [-2, 2]: see `GenerateOptions.frequencyPenalty`. */
  frequency_penalty?: number;
  /** OpenAI's: token id (as a string key) → bias in [-100, 100]. */
  logit_bias?: Record<string, number>;
  /** llama.cpp's: see `GenerateOptions.topK`. */
  top_k?: number;
  /** llama.cpp's: see `GenerateOptions.minP`. */
  min_p?: number;
  /** llama.cpp's: see `GenerateOptions.repetitionPenalty`. */
  repeat_penalty?: number;
  /** llama.cpp's: see `GenerateOptions.penaltyLastN`. */
  repeat_last_n?: number;
  stop?: string | string[];
  /** JSON mode or a JSON schema the output must follow: see `GenerateOptions.responseFormat`. */
  response_format?: ResponseFormat;
  signal?: AbortSignal;
}

/** OpenAI's `usage`, with the prompt tokens the prefix cache supplied as `cached_tokens`. */
export interface OpenAiUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

/**
 * The generate options of `p`'s sampling parameters (unset ones stay unset), checked now so
 * that a bad one rejects `create()` itself, streaming or not (token ids against the vocabulary
 * are checked when generation starts).
 */
export function samplingOptions(p: OpenAiSamplingParams, logprobs: Pick<GenerateOptions, 'logprobs' | 'topLogprobs'> = {}): GenerateOptions {
  const opts: GenerateOptions = {
    ...logprobs,
    temperature: p.temperature,
    topP: p.top_p,
    seed: p.seed,
    presencePenalty: p.presence_penalty,
    frequencyPenalty: p.frequency_penalty,
    logitBias: p.logit_bias,
    topK: p.top_k,
    minP: p.min_p,
    repetitionPenalty: p.repeat_penalty,
    penaltyLastN: p.repeat_last_n,
    stop: p.stop === undefined ? undefined : Array.isArray(p.stop) ? p.stop : [p.stop],
    responseFormat: p.response_format,
    signal: p.signal,
  };
  resolveSampling(opts, undefined);
  resolveTopLogprobs(opts);
  resolveResponseFormat(opts.responseFormat);
  return opts;
}

/** The `usage` of a request from its final chunk. */
export function usageOf(last: GenerateChunk): OpenAiUsage {
  const s = last.stats!;
  return {
    prompt_tokens: s.promptTokens,
    completion_tokens: s.generatedTokens,
    total_tokens: s.promptTokens + s.generatedTokens,
    prompt_tokens_details: { cached_tokens: s.cachedTokens },
  };
}

const decoder = new TextDecoder('utf-8');

/** A token's text for logprobs: its bytes as UTF-8, a partial character as U+FFFD (as OpenAI's). */
export function tokenString(bytes: readonly number[]): string {
  return decoder.decode(new Uint8Array(bytes));
}
