/**
 * Types of the harness's page functions, shared with the Node side (CLI, tests, benchmarks).
 * Pure types: importing this from Node pulls in no browser code.
 */
import type { EngineStats } from '../engine/types.js';

export interface PageGenerateOptions {
  model: string;
  tokenizer: string;
  tp: number;
  prompt: string;
  maxTokens: number;
  temperature: number;
  topP: number;
  seed: number;
  ignoreEos?: boolean;
  /** Call `window.tpEmit(text)` for each piece (the CLI streams it). */
  stream?: boolean;
  maxRows?: number;
  /** Load progress events are pushed here (tests). */
  onProgressLog?: { rank: number; fromCache: boolean }[];
  /** Sequences batched at once (engine maxBatch). */
  maxBatch?: number;
  /** Use the IndexedDB shard cache (default true). */
  cache?: boolean;
  /** Collective spin iterations (default: the engine's). */
  spin?: number;
  /** Feed the prompt one token per step instead of batched prefill (tests compare both). */
  noPrefillBatch?: boolean;
  /** Quantised models: f32 activations instead of runq.c's int8 (engine weightOnly). */
  weightOnly?: boolean;
}

export interface PageGenerateResult {
  prompt_tokens: number[];
  tokens: number[];
  text: string;
  tp: number;
  timings: { load_ms: number; prefill_tokens_per_s: number; decode_tokens_per_s: number };
  stats: EngineStats;
}


/** Several streams timed together (continuous batching benchmark). */
export interface PageConcurrentResult {
  tokens: number[][];
  /** ms from the moment every stream had its first token to the last token. */
  decodeMs: number;
  /** Tokens produced in that time, all streams together. */
  decodeTokens: number;
  stats: EngineStats;
}
