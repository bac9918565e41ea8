/**
 * Types of the page's engine functions (src/cli/page/engine.ts), shared with the Node side (CLI,
 * tests, benchmarks).
 * Pure types: importing this from Node pulls in no browser code.
 */
import type { EngineStats } from '../../engine/types.js';
import type { DevicesOption } from '../../engine/placement.js';
import type { AxisSplit } from '../../parallel/axis-split.js';

export interface PageGenerateOptions {
  /** A llama2.c file's URL, or a Hugging Face model's base URL as `{hf}`. */
  model: string | { hf: string };
  /** tokenizer.bin or tokenizer.json; an HF model defaults to its own tokenizer.json. */
  tokenizer?: string;
  /** Ranks (engine tensorParallel); 0 leaves it to `devices` or `split`. */
  tp: number | 'auto';
  /**
   * Engine `devices`: "auto", "gpu", "cpu" (CPU ranks), a count or per-rank specs (`{cpu: true}`
   * among them). "gpu" goes to the engine as is, for a placement that takes it.
   */
  devices?: DevicesOption;
  /** Engine `split`: per-rank shares of every axis (a list), or per axis (`{heads: [8, 4]}`). */
  split?: readonly number[] | AxisSplit;
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
  /** Engines (of different options) the page keeps loaded for reuse; default 1. */
  keepEngines?: number;
  /** Use the IndexedDB shard cache (default true). */
  cache?: boolean;
  /** Collective spin iterations (default: the engine's). */
  spin?: number;
  /** Time kernels on the GPU (engine `profile`). */
  profile?: boolean;
  /** Longest wait in a collective (engine timeoutMs; default the engine's). */
  timeoutMs?: number;
  /** Render the prompt as one user message through the model's chat template. */
  chat?: boolean;
  /** Feed the prompt one token per step instead of batched prefill (tests compare both). */
  noPrefillBatch?: boolean;
  /** Quantised models: f32 activations instead of runq.c's int8 (engine weightOnly). */
  weightOnly?: boolean;
  /** GGUF: int8 activations for quantised matrices (W4A8 / W8A8; engine int8Activations). */
  int8Activations?: boolean;
  /** W8A8: runq.c's arithmetic bit for bit (engine runqExact, default true). */
  runqExact?: boolean;
  /** What the KV cache stores (engine kvCache, default 'auto'). */
  kvCache?: 'auto' | 'f16' | 'f32';
  /** Ranks in other tabs (engine `tabs`): the last `count` ranks join from pages at ?join=<id>. */
  tabs?: { id: string; count: number; timeoutMs?: number };
  /** Fetch the model in the page and hand the engine a Blob (as a picked File would be). */
  modelAsBlob?: boolean;
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
  /** Prompt tokens of one stream (BOS included), as the engine encoded them. */
  promptTokens: number;
  /** ms while every stream decoded: from the last stream's first token to the first stream's last (see `timedConcurrent`). */
  decodeMs: number;
  /** Tokens produced in that time, all streams together. */
  decodeTokens: number;
  stats: EngineStats;
}
