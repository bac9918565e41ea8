/**
 * The engine: a model split over `tensorParallel` shard workers, a tokenizer, and the scheduler
 * that turns prompts into streamed tokens. `createEngine` is the SDK's one entry point.
 */
import { Scheduler, type StepBackend, type SamplerFactory } from './scheduler.js';
import { WorkerGroup, type LoadProgress } from './worker-group.js';
import type { EngineStats, GenerateChunk, GenerateOptions } from './types.js';
import { openSource, type ModelSource } from '../loader/source.js';
import { MODEL_HEADER_BYTES, parseModelHeader } from '../model/formats/detect.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import { Sampler } from '../model/sampler.js';
import { makePlan } from '../parallel/plan.js';
import type { ModelConfig } from '../model/config.js';
import { DEFAULT_SPIN } from '../collective/index.js';
import { createCompletions, type Completions } from './completions.js';
import { clearShardCache } from '../cache/shard-cache.js';
import { InvalidArgumentError, NotIsolatedError, WebGpuUnavailableError, DisposedError } from '../errors.js';

export interface EngineOptions {
  /** A llama2.c checkpoint (version 0 f32, or version 2 Q8_0 as runq.c reads): URL, File/Blob or ArrayBuffer. */
  model: ModelSource;
  /** The matching llama2.c tokenizer.bin: URL, File/Blob or ArrayBuffer. */
  tokenizer: ModelSource;
  /**
   * Ranks to split the model over (default 1). Must divide the query heads. `"auto"` places
   * one rank per distinct adapter: with one adapter (as in most machines and in headless
   * Chromium) that is 1, since ranks sharing an adapter only add round trips.
   */
  tensorParallel?: number | 'auto';
  /** Positions of KV cache to allocate (default: the model's seq_len). */
  maxContext?: number;
  /** Prompt rows per prefill pass (default 64). */
  maxRows?: number;
  /**
   * Requests decoded together (continuous batching; default 4). Each holds a KV cache of
   * `maxContext` positions on every rank, so memory grows with it; 1 serves one at a time.
   */
  maxBatch?: number;
  onProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
  /** Keep each rank's shard in IndexedDB so the next load needs no download (default true). */
  cache?: boolean;
  /** Spin iterations before a rank sleeps in a collective (default tuned by the decode benchmark). */
  spin?: number;
  /** Longest wait in a collective before it names the missing rank (ms, default 30 000). */
  timeoutMs?: number;
  /**
   * Quantised (llama2.c v2) models: keep activations f32 and only dequantise the weights.
   * By default they are quantised to int8 per group before every matmul, as runq.c does (W8A8).
   */
  weightOnly?: boolean;
}

/** A loaded model, ready to generate. One `Engine` interface for every backend. */
export interface Engine {
  readonly config: ModelConfig;
  readonly tensorParallel: number;
  /** Streams the generation of `prompt`; break out of the loop or abort to stop promptly. */
  generate(prompt: string, opts?: GenerateOptions): AsyncIterable<GenerateChunk>;
  /** Generation from token ids (the prompt's BOS included). */
  generateTokens(promptTokens: number[], opts?: GenerateOptions): AsyncIterable<GenerateChunk>;
  /** The OpenAI completions shape: `await engine.completions.create({prompt, max_tokens, stream})`. */
  readonly completions: Completions;
  /** Token ids of `text` as the engine would encode a prompt (BOS first). */
  encode(text: string): number[];
  stats(): Promise<EngineStats>;
  /** Clears the per-step timings of `stats()`. */
  resetStats(): Promise<void>;
  /** Empties the IndexedDB shard cache (every model's). */
  clearCache(): Promise<void>;
  /** Frees every device and worker. */
  dispose(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 30_000;

export async function createEngine(options: EngineOptions): Promise<Engine> {
  if (typeof crossOriginIsolated !== 'undefined' && !crossOriginIsolated) throw new NotIsolatedError();
  if (typeof SharedArrayBuffer === 'undefined') throw new NotIsolatedError();
  if (typeof navigator === 'undefined' || !('gpu' in navigator)) throw new WebGpuUnavailableError('navigator.gpu is missing');

  const t0 = performance.now();
  const source = openSource(options.model);
  const [size, head, tokBytes] = await Promise.all([source.size(), source.head(MODEL_HEADER_BYTES), readAll(options.tokenizer)]);
  const { config, tensors, format } = parseModelHeader(head, size);
  const tokenizer = Tokenizer.parse(tokBytes, config.vocabSize);
  const tp = options.tensorParallel === 'auto' ? 1 : (options.tensorParallel ?? 1);
  const plan = makePlan(config, { tensorParallel: tp }, tensors);
  const contextLength = options.maxContext ?? config.seqLen;
  if (!Number.isInteger(contextLength) || contextLength < 2) throw new InvalidArgumentError(`maxContext must be a whole number ≥ 2, got ${contextLength}`);
  const maxRows = Math.min(options.maxRows ?? 64, contextLength);
  const maxBatch = options.maxBatch ?? 4;
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new InvalidArgumentError(`maxBatch must be a whole number ≥ 1, got ${maxBatch}`);

  const group = await WorkerGroup.create({
    config, plan, source, maxRows, contextLength, maxSlots: maxBatch,
    spin: options.spin ?? DEFAULT_SPIN,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    onProgress: options.onProgress,
    signal: options.signal,
    cache: options.cache ?? true,
    activations: format === 'llama2c-v2' && !options.weightOnly ? 'int8' : 'f32',
  });
  const loadMs = performance.now() - t0;
  const engine = assembleEngine(config, plan.world, group, tokenizer, async () => group.stats(), () => group.dispose(), () => group.resetStats(), source.name);
  return {
    ...engine,
    async stats() {
      const s = await engine.stats();
      return { ...s, loadMs, warnings: [...group.warnings, ...s.warnings] };
    },
  };
}

/** Builds the `Engine` surface over any step backend (the workers, or the CPU oracle in tests). */
export function assembleEngine(
  config: ModelConfig,
  tensorParallel: number,
  backend: StepBackend,
  tokenizer: Tokenizer,
  rankStats: () => Promise<EngineStats['ranks']>,
  disposeBackend: () => Promise<void>,
  resetBackendStats: () => Promise<void> = async () => {},
  modelName = 'webgpu-tp',
): Engine {
  const makeSampler: SamplerFactory = ({ temperature, topP, seed }) =>
    new Sampler(config.vocabSize, { temperature, topp: topP, seed });
  const scheduler = new Scheduler(backend, { encode: (t, b, e) => tokenizer.encode(t, b, e), decodeBytes: (p, t) => tokenizer.decode(p, t) }, makeSampler);
  let disposed = false;
  const guard = () => {
    if (disposed) throw new DisposedError();
  };
  const generate = (prompt: string, opts?: GenerateOptions) => {
    guard();
    return scheduler.generate(prompt, opts);
  };
  return {
    config,
    tensorParallel,
    generate,
    completions: createCompletions(generate, modelName),
    clearCache: () => clearShardCache(),
    generateTokens(tokens, opts) {
      guard();
      return scheduler.generateTokens(tokens, opts);
    },
    encode: (text) => tokenizer.encode(text, true, false),
    async stats() {
      const ranks = await rankStats();
      const schedulerMs = scheduler.schedulerMs;
      for (const r of ranks) r.breakdown.scheduler_ms = schedulerMs;
      return { tensorParallel, loadMs: 0, ranks, schedulerMs, warnings: ranks.flatMap((r) => r.warnings.map((w) => `rank ${r.rank}: ${w}`)) };
    },
    async resetStats() {
      scheduler.resetStats();
      await resetBackendStats();
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      scheduler.dispose();
      await disposeBackend();
    },
  };
}

async function readAll(src: ModelSource): Promise<Uint8Array> {
  const s = openSource(src);
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of s.chunks()) {
    parts.push(c);
    n += c.byteLength;
  }
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.byteLength;
  }
  return out;
}
