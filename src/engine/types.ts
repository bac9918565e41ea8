/** Types shared by the engine's parts and exported by the SDK. */
import type { RankBackend } from '../gpu/core/adapter.js';
import type { ResponseFormat } from './structured.js';

export type { RankBackend };

/**
 * Options of one generation request.
 *
 * The prompt: `generate("")` is BOS alone (run.c's unconditional story). A prompt that does not
 * leave room for one new token in the context (BOS included, `promptTokens ≥ maxContext`) is
 * refused with an `InvalidArgumentError` naming both numbers; it is never truncated.
 */
export interface GenerateOptions {
  /**
   * New tokens to generate at most (default 256; a whole number ≥ 0, else
   * `InvalidArgumentError`). Capped by the context: at most `maxContext − promptTokens` come
   * out, and a request stopped by either limit ends with `finishReason: 'length'`.
   */
  maxTokens?: number;
  /** 0 = greedy (argmax). Default 1.0, as llama2.c. */
  temperature?: number;
  /**
   * Nucleus sampling cutoff in [0, 1]; 0 or 1 samples from the whole distribution, and a value
   * outside [0, 1] is an `InvalidArgumentError`. Default 0.9, as llama2.c.
   */
  topP?: number;
  /** Seed of llama2.c's xorshift sampler; unset, 0 or negative: the current time in seconds, as run.c. */
  seed?: number;
  /**
   * Keep only the `topK` most likely tokens (llama.cpp's `top_k`); a whole number ≥ 0, 0 = off
   * (default). The samplers run in llama.cpp's order: penalties, `logitBias`, top-k, top-p,
   * min-p, temperature; top-p and min-p therefore see the temperature-1 distribution.
   */
  topK?: number;
  /** min-p: drop tokens less likely than `minP` × the most likely one; in [0, 1], 0 = off (default). */
  minP?: number;
  /**
   * llama.cpp's `repeat_penalty`: the logit of a token among the last `penaltyLastN` is divided
   * by it when positive and multiplied by it when not. A finite number > 0; 1 = off (default).
   */
  repetitionPenalty?: number;
  /** OpenAI's `presence_penalty`: subtracted once from the logit of each token in the window; [-2, 2], default 0. */
  presencePenalty?: number;
  /** OpenAI's `frequency_penalty`: subtracted from a token's logit once per occurrence in the window; [-2, 2], default 0. */
  frequencyPenalty?: number;
  /**
   * How many of the sequence's latest tokens, the prompt's included, the three penalties count
   * (llama.cpp's `repeat_last_n`, default 64); 0 = none, -1 = all.
   */
  penaltyLastN?: number;
  /** Added to the logits of these token ids before sampling (OpenAI's `logit_bias`), each in [-100, 100]; -100 all but bans a token. */
  logitBias?: Readonly<Record<number, number>>;
  /**
   * Put each sampled token's log-probability in its chunk (`GenerateChunk.logprobs`): the
   * log-softmax of the model's raw logits, before penalties, bias and temperature (OpenAI's).
   */
  logprobs?: boolean;
  /** Also list that many of the most likely tokens at each position, 0..20 (implies `logprobs`). */
  topLogprobs?: number;
  /**
   * Reuse the KV cache a finished request left in a free slot when this prompt starts with
   * its tokens, and prefill only the rest (llama.cpp's `cache_prompt`; default true). The
   * tokens are the same either way; `stats.cachedTokens` says how many were reused.
   */
  cachePrompt?: boolean;
  /**
   * Constrain the output to JSON (OpenAI's `response_format`): `{ type: 'json_object' }` for any
   * object, `{ type: 'json_schema', json_schema: { name, schema, strict? } }` for one that
   * validates against `schema`. Every token is sampled (greedy too) from those the grammar allows
   * next, and a stop token only once the JSON is complete, so output that ends with
   * `finishReason: 'stop'` parses and validates; one cut short by `maxTokens` or the context
   * ends with `'length'`. A `stop` string still ends the output where it appears, inside the
   * JSON too (with `'stop'`, as OpenAI's does): leave `stop` unset for output that always parses. A malformed format or a schema the grammar compiler rejects is an
   * `InvalidArgumentError` naming `responseFormat`. The grammar library (~1 MB) loads on first use.
   */
  responseFormat?: ResponseFormat;
  /** Strings that end the generation when they appear in the output (not included). */
  stop?: string[];
  /** Keep generating past BOS/EOS (benchmarks on random weights). */
  ignoreEos?: boolean;
  signal?: AbortSignal;
}

/** Why a request ended; an aborted one rejects with `AbortedError` instead. */
export type FinishReason = 'stop' | 'length';

/** Timings of one request. */
export interface GenerationStats {
  promptTokens: number;
  /** Prompt tokens whose KV a kept prefix supplied (see `cachePrompt`); the rest were prefilled. */
  cachedTokens: number;
  generatedTokens: number;
  /** ms from the request's start of prefill to its first token. */
  prefillMs: number;
  /** Prompt tokens prefilled (the cached ones not counted) per second. */
  prefillTokensPerS: number;
  decodeMs: number;
  decodeTokensPerS: number;
  finishReason: FinishReason;
}

/** One piece of a streamed generation. */
export interface GenerateChunk {
  /** The sampled token id (-1 on the final chunk when it carries no token). */
  token: number;
  /** Text completed by this token; never splits a UTF-8 character (may be ""). */
  text: string;
  done: boolean;
  /** Present on the final chunk. */
  stats?: GenerationStats;
  /** The token's log-probability, with `logprobs` or `topLogprobs` (absent on the final chunk). */
  logprobs?: ChunkLogprobs;
}

/** A token and its log-probability under the model (the log-softmax of its raw logits). */
export interface TokenLogprob {
  token: number;
  /** The token's UTF-8 bytes as it decodes after the previous token (may be part of a character). */
  bytes: number[];
  logprob: number;
}

/** The sampled token's log-probability and the most likely tokens at its position. */
export interface ChunkLogprobs extends TokenLogprob {
  /** `topLogprobs` tokens, most likely first (equal ones: lower id first). */
  top: TokenLogprob[];
}

/** Mean time per decode step, split by where it went (ms). */
export interface StepBreakdown {
  /**
   * The rest of the step on the rank: encoding and submitting, and the last stage's wait (its
   * GPU work, the classifier and the logits readback), which no sync point measures.
   */
  compute_ms: number;
  /** Sync points, submit → partial sum on the CPU: the stage's GPU work plus the readback. */
  readback_ms: number;
  /** Sync points: the all-reduce, waits for slower ranks included. */
  allreduce_ms: number;
  /** Sync points: the upload of the sum, which is the new residual stream (rank 0's partial carries it). */
  upload_ms: number;
  scheduler_ms: number;
}

/** What each rank reports: its worker's report, the backend it computes with, and how its shard arrived. */
export interface RankStats extends RankReport {
  /** `'gpu'` (WebGPU) or `'cpu'` (WebAssembly SIMD on the rank's own core); why is `placement.reason`. */
  backend: RankBackend;
  /** This rank's packed shard when the engine loaded: its bytes, and whether they came from the shard cache. */
  shard: RankShard;
}

export interface RankShard {
  bytes: number;
  fromCache: boolean;
}

/** What a rank's worker reports about itself (`RankStats` without what the main thread adds). */
export interface RankReport {
  rank: number;
  adapter: string;
  /** Bytes of weights this rank uploaded to its device. */
  weightBytes: number;
  /** Bytes of KV cache and activations on this rank's device. */
  workBytes: number;
  precision: RankPrecision;
  steps: number;
  breakdown: StepBreakdown;
  /** Median ms from one sync point's readback start to its upload done. */
  allreduceRoundtripMs: number;
  /**
   * GPU time per kernel kind since the last reset, slowest first; only with the engine's
   * `profile` option on an adapter with `timestamp-query`.
   */
  kernels?: KernelTiming[];
  warnings: string[];
}

/** What a rank stores in which precision, and how its kernels read it (issue #10's f16). */
export interface RankPrecision {
  /** Its weight matrices' dtype ('mixed' when they differ, e.g. a GGUF with f16 and Q8_0 matrices). */
  weights: 'f32' | 'f16' | 'q8_0' | 'q4_0' | 'q8_m' | 'mixed';
  /** The arithmetic of the weight kernels: f32 with either kind of f16 kernel. */
  math: 'f32' | 'f16';
  /**
   * f16 weights load as halves with `shader-f16` ('native') or are unpacked from u32 words
   * without it ('packed', e.g. SwiftShader).
   */
  f16Kernels: 'native' | 'packed';
  /** The KV cache's values (EngineOptions.kvCache); attention computes in f32 either way. */
  kvCache: 'f16' | 'f32';
  /** How kernels read an f16 cache: halves unpacked from u32 words, or native f16 (`shader-f16`). */
  kvCacheKernels: 'f32' | 'packed' | 'native';
}

/** One kernel kind's GPU time (layers summed: `matmul wqkv` is every layer's). */
export interface KernelTiming {
  name: string;
  /** Dispatches timed. */
  calls: number;
  /** Total GPU ms. */
  gpuMs: number;
}

/** Where the ranks went and why (see `devices` in EngineOptions). */
export interface DevicePlacement {
  /**
   * Which option decided: a `devices` count, a `devices` list, `devices: "gpu"` or `"cpu"`, or
   * `"auto"` (the default).
   */
  mode: 'count' | 'list' | 'gpu' | 'cpu' | 'auto';
  /**
   * One sentence: how many ranks, of which backend, on which adapters, and why; under `"auto"`,
   * what it saw (a GPU, a CPU fallback adapter, no WebGPU), what CPU ranks cannot run if that
   * decided, and the timings when it measured.
   */
  reason: string;
  /** The distinct adapters the choice saw, by name. */
  adapters: string[];
  /**
   * How the work is split: evenly, by the `split` option, by measuring each adapter, or (`blocks`,
   * under `"auto"`) the query heads in whole super-blocks of wo with the MLP and vocab even,
   * where an even split would cut one.
   */
  split: 'even' | 'explicit' | 'calibrated' | 'blocks';
  /** Each rank's share of the query heads as planned (sums to 1); `ranks` gives every axis's ranges. */
  fractions: number[];
  /** ms per calibration matmul on each of `adapters`, when they were measured. */
  calibrationMs?: number[];
  /** When `"auto"` timed candidate placements to choose between them. */
  timing?: PlacementTiming;
  /**
   * What the Q8_0/Q4_0 matmuls (and, on CPU ranks, K-quant ones) take as input: `int8`, quantised
   * per group of 32 (W8A8 / W4A8), or `f32` (weight-only). See `int8Activations` in EngineOptions.
   */
  activations: 'int8' | 'f32';
  /** Why: the option that forced it, or the default's rule for this file and placement. */
  activationsReason: string;
  ranks: {
    rank: number;
    /** `'gpu'` or `'cpu'`. */
    backend: RankBackend;
    /** The spec the rank's worker asked with (`default`, `high-performance`, `fallback`, `vendor~x`, ...). */
    spec: string;
    /** The adapter its worker got. */
    adapter: string;
    /** Query heads [start, end). */
    heads: [number, number];
    /** MLP hidden units [start, end). */
    hidden: [number, number];
    /** Vocabulary rows of the classifier [start, end). */
    vocab: [number, number];
  }[];
}

/**
 * How `"auto"` chose by measurement: each candidate placement was loaded and ran a warm-up
 * step and then `steps` decode steps; the fastest won (one with more ranks must be faster by
 * `TIMING_MARGIN`, so that noise does not add ranks).
 */
export interface PlacementTiming {
  /** Decode steps timed per candidate. */
  steps: number;
  /** Wall ms the choice took, the candidates' loads included. */
  totalMs: number;
  candidates: {
    /** e.g. `2 CPU ranks`, `GPU alone`, `GPU + 1 CPU rank`. */
    label: string;
    backends: RankBackend[];
    /** Median ms per decode step. */
    msPerStep: number;
  }[];
  /** Index into `candidates` of the one chosen. */
  chosen: number;
}

export interface EngineStats {
  tensorParallel: number;
  /** Where the ranks run (absent for backends without devices). */
  placement?: DevicePlacement;
  loadMs: number;
  ranks: RankStats[];
  /** Time the scheduler spends on the main thread per step (ms, mean). */
  schedulerMs: number;
  /** Prefix KV reuse since the last `resetStats()`: requests that hit, prompt tokens reused. */
  prefixCache?: { hits: number; reusedTokens: number };
  warnings: string[];
}
