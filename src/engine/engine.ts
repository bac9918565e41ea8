/**
 * The engine: a model split over `tensorParallel` shard workers, a tokenizer, and the scheduler
 * that turns prompts into streamed tokens. `createEngine` is the SDK's one entry point.
 */
import { Scheduler, type StepBackend, type SamplerFactory } from './scheduler.js';
import { WorkerGroup, type TabRanksOptions } from './worker-group.js';
import type { LoadProgress } from './load-shards.js';
import type { RankOptions } from '../protocol.js';
import type { DevicePlacement, EngineStats, GenerateChunk, GenerateOptions } from './types.js';
import { browserProbe, placeRanks, type DevicesOption, type Placement } from './placement.js';
import { backendOf, describeSpec, isCpuSpec } from '../gpu/core/adapter.js';
import { checkCpuRanksFit, type CpuStateSizes } from './cpu-memory.js';
import { loadFastest } from './time-placements.js';
import { calibrateDevices, cpuBlocker } from './device-measure.js';
import { openSource, type ModelSource } from '../loader/source.js';
import { detectFormat, MODEL_HEADER_BYTES, parseModelHeader, type ModelLayout } from '../model/formats/detect.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import { isHfModelOption, openHfForEngine, type HfModelOption } from './hf-open.js';
import { llama2cTokenizer, parseTokenizer, type EngineTokenizer } from './tokenizers.js';
import { openGgufForEngine } from './gguf-open.js';
import type { ByteSource } from '../loader/source.js';
import type { TensorInfo } from '../model/config.js';
import { TokenSampler } from './sampling.js';
import { makePlan, type AxisSplit, type Plan } from '../parallel/plan.js';
import type { ModelConfig } from '../model/config.js';
import { createCompletions, type Completions } from './completions.js';
import { createChatCompletions, type ChatCompletions, type ChatMessage } from './chat-completions.js';
import { clearShardCache } from '../cache/shard-cache.js';
import { registerFaultTarget } from './fault-injection.js';
import { checkKvCacheOption, type KvCacheOption } from '../gpu/kernels/kv-format.js';
import { InvalidArgumentError, TokenizerFormatError, NotIsolatedError, DisposedError, AbortedError, RankMemoryError } from '../errors.js';
import { rankMemoryAtDegree } from './rank-memory.js';
import { resolveActivations, type ActivationChoice } from './activations.js';

export interface EngineOptions {
  /**
   * A llama2.c checkpoint (version 0 f32, or version 2 Q8_0 as runq.c reads), a Llama GGUF
   * (F32, F16, Q8_0 or Q4_0 tensors; its own tokenizer) — a URL, File/Blob or ArrayBuffer — or a
   * Hugging Face model directory:
   * `{hf: 'https://huggingface.co/ORG/NAME/resolve/main'}` (any base URL holding config.json and
   * model.safetensors or model.safetensors.index.json + shards), or `{hf: {'config.json': file, ...}}`.
   * F16 matrices stay f16 on the GPU (packed halves, or native with `shader-f16`); BF16
   * weights, and F16 norms and biases, become f32 as they stream in.
   */
  model: ModelSource | HfModelOption;
  /**
   * The tokenizer: llama2.c's tokenizer.bin or a Hugging Face tokenizer.json (URL, File/Blob or
   * ArrayBuffer). Required for a llama2.c model; an HF model defaults to its own tokenizer.json,
   * a GGUF to the tokenizer in its metadata.
   */
  tokenizer?: ModelSource;
  /**
   * Ranks to split the model over. Must divide the query heads unless `split` is given. Unset,
   * `devices` decides (`"auto"` by measurement, else 1); `"auto"` is the same as
   * `devices: "auto"`.
   */
  tensorParallel?: number | 'auto';
  /**
   * Which devices the ranks run on (default `"auto"`; with `tabs`, `"gpu"`).
   * - `"auto"`: decided on this page by measurement. A real GPU adapter (not the browser's
   *   fallback adapter, not SwiftShader) gets GPU ranks: one per distinct adapter, split by a
   *   short matmul measurement, or the smallest degree whose buffers fit the adapter's limits.
   *   A fallback adapter, or no WebGPU at all, gets CPU ranks: every degree from the smallest
   *   that fits 4 GiB per rank up to one rank per core (`navigator.hardwareConcurrency`) is
   *   loaded and timed for a few decode steps, and the fastest is kept (the others' shards stay
   *   in the shard cache, so the next load times them without downloading). With a GPU and
   *   cores to spare, GPU + CPU ranks are timed against GPU ranks alone and CPU ranks join only
   *   if a step is faster. A request CPU ranks cannot run yet (llama2.c v2 groups other than 32,
   *   `runqExact`) gets GPU ranks. A `tensorParallel` number (or a `split`) fixes the
   *   count, and nothing is timed.
   * - `"gpu"`: every rank on the default WebGPU adapter, as many as `tensorParallel` says
   *   (default 1). Without `navigator.gpu`: `WebGpuUnavailableError`.
   * - a number N: N ranks on the default adapter (as `"gpu"` with `tensorParallel: N`).
   * - `"cpu"`: CPU ranks, as many as `tensorParallel` says (default 1). A CPU rank computes
   *   with WebAssembly SIMD on its own worker thread and needs no WebGPU. It takes f32, f16 and
   *   GGUF Q8_0/Q4_0 weights (int8 activations by default, see `int8Activations`); other quantised groups and runq.c's
   *   exact W8A8 fail at load with a typed error. Its shard, KV cache and activations share one WebAssembly memory (4 GiB at
   *   most): a model too large for that fails before loading with `RankMemoryError`, which
   *   names the smallest degree that fits.
   * - a list: one rank per spec, `{powerPreference}`, `{forceFallbackAdapter: true}`,
   *   `{info: {vendor?, architecture?, device?, description?}}` (case-insensitive substrings)
   *   or `{cpu: true}` (a CPU rank), so GPU and CPU ranks can mix.
   * A `tensorParallel` number must agree with a count or list; with `"auto"` on GPU adapters it
   * deals that many ranks round-robin over the adapters found. Disagreements throw
   * `InvalidArgumentError`; a filter that matches no adapter throws `AdapterNotFoundError`.
   * `stats().placement` says what was chosen and why, with each rank's `backend`.
   */
  devices?: DevicesOption;
  /**
   * Per-rank shares of the work for unequal devices, e.g. `[0.5, 0.25, 0.25]` (normalized). Query
   * heads are given out whole, KV heads follow them, MLP units go in aligned blocks and vocabulary
   * rows follow the shares. Its length is the rank count (must agree with `tensorParallel`/`devices`).
   *
   * Or shares per axis, `{heads?, hidden?, vocab?}` (each one per rank, all of one length), an
   * axis left out split evenly: `{heads: [8, 4]}` runs a stories110M-shaped K-quant file (wo's
   * 768 inputs are 3 super-blocks of 256) at TP 2 with the heads 8:4 and the MLP and vocab even,
   * where `[2, 1]` would give rank 0 two thirds of every matrix. KV heads follow the query heads.
   * `stats().placement.ranks` gives each rank's heads, MLP units and vocab rows.
   */
  split?: readonly number[] | AxisSplit;
  /**
   * Positions of KV cache to allocate (default: the model's seq_len, at most 4096: HF configs
   * state contexts of 131072 tokens, whose KV cache would take gigabytes). More than the model's
   * trained context (seq_len, max_position_embeddings) is an `InvalidArgumentError`.
   */
  maxContext?: number;
  /** Prompt rows per prefill pass (default 64). */
  maxRows?: number;
  /**
   * Requests decoded together (continuous batching; default 4). Each holds a KV cache of
   * `maxContext` positions on every rank, so memory grows with it; 1 serves one at a time.
   */
  maxBatch?: number;
  onProgress?: (p: LoadProgress) => void;
  /**
   * Aborts the load: `createEngine` rejects with `AbortedError` (code `ABORTED`) between model
   * chunks while streaming, or at the next stage (header, placement, workers and upload), having
   * stopped every worker it started. It has no effect on an engine already returned.
   */
  signal?: AbortSignal;
  /** Keep each rank's shard in IndexedDB so the next load needs no download (default true). */
  cache?: boolean;
  /** Spin iterations before a rank sleeps in a collective (default by the rank's kind: long for CPU ranks with a core each, `defaultSpin`). */
  spin?: number;
  /** Longest wait in a collective before it names the missing rank (ms, default 30 000). */
  timeoutMs?: number;
  /**
   * Time every kernel on the GPU with timestamp queries, reported per kernel kind in
   * `stats().ranks[i].kernels`. Each op then runs in its own compute pass, so steps are a little
   * slower: a measuring mode (default false).
   */
  profile?: boolean;
  /**
   * f32 activations for every format: quantised matrices are only dequantised (weight-only), the
   * same as `int8Activations: false`. Without it a llama2.c v2 file runs W8A8 as runq.c does, and
   * a GGUF as `int8Activations` says.
   */
  weightOnly?: boolean;
  /**
   * Quantise each quantised matmul's input to int8 per group of 32 and take integer dot products
   * per group, as llama.cpp's CPU path does: W4A8 for Q4_0 matrices, W8A8 for Q8_0 (and, on CPU
   * ranks, for K-quant matrices); f32 and f16 matrices keep f32 activations. `true` forces it,
   * `false` forces f32 activations (weight-only). Unset: int8 for a GGUF whose quantised matrices
   * are all Q8_0/Q4_0 when every rank is a CPU rank, where W4A8 decodes far faster than weight-only
   * Q4_0's nibble unpacking; f32 with any GPU rank and for K-quant files; a llama2.c v2 file runs
   * W8A8. The logits differ from weight-only's by the activations' rounding.
   * `stats().placement.activations` says what ran and `activationsReason` why. `true` with
   * `weightOnly` is an `InvalidArgumentError`.
   */
  int8Activations?: boolean;
  /**
   * W8A8 (llama2.c v2 files): compute runq.c's floats bit for bit (default true), so the tokens
   * are runq.c's however narrow a logit margin. Attention runs in run.c's order (max, expf, sum,
   * divide; one invocation per row and head), and at TP > 1 each row-parallel matmul's (wo, w2)
   * groups are summed in runq.c's order, one rank after another, each continuing the sums the
   * previous rank passed on: one round trip per rank per sync point instead of one all-reduce.
   * `false` runs the online-softmax attention and all-reduces the ranks' partial sums: faster,
   * but last bits differ, which W8A8's requantisation can grow into another token after many
   * steps. Ignored for f32 activations.
   */
  runqExact?: boolean;
  /**
   * What the KV cache stores: `'auto'` (default) f16 where a rank's device has `shader-f16`,
   * else f32; `'f16'` halves on any adapter (two per u32 word without `shader-f16`); `'f32'`.
   * f16 halves the cache's memory (`stats().ranks[i].workBytes`) and the bytes attention reads;
   * attention still computes in f32, on K and V rounded to f16 as they enter the cache.
   * `auto` stays f32 for a runq.c-exact W8A8 run (runq.c's cache is f32).
   * `stats().ranks[i].precision` says what each rank runs. Anything else: InvalidArgumentError.
   */
  kvCache?: KvCacheOption;
  /**
   * Ranks in other tabs of this origin. The last `count` of the ranks (`tensorParallel`,
   * `devices` or `split` still give the total) run in tabs opened at the demo's `?join=<id>`
   * (or any page calling `joinEngine(id)`): each runs the rank in a worker with its own adapter
   * and device, and loads its own slices (it fetches a URL model itself; a File/Blob or buffer is
   * posted to it). `createEngine` waits up to `timeoutMs` (default 60 000) for them, else throws
   * `TabJoinTimeoutError`. With tabs, every rank all-reduces over messages (BroadcastChannel), with
   * the same sums bit for bit; a step is a round trip per rank, so it is for devices in other
   * tabs, not for speed on one. A tab that closes or freezes fails the request in progress
   * within `timeoutMs` of the engine with a typed error naming its rank (`WorkerFailedError`,
   * `CollectiveTimeoutError`), and the engine must be created again: ranks in tabs are not
   * rebuilt. Not with `devices: "auto"` or a Hugging Face model.
   */
  tabs?: { id: string; count: number; timeoutMs?: number };
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
  /**
   * The OpenAI chat completions shape: `await engine.chat.completions.create({messages, stream})`,
   * through the chat template of tokenizer_config.json (a TokenizerFormatError without one).
   */
  readonly chat: { readonly completions: ChatCompletions };
  /** Token ids of `text` as the engine would encode a prompt (BOS first). */
  encode(text: string): number[];
  /** Token ids of a chat rendered by the model's template (its BOS where the template puts one). */
  encodeChat(messages: readonly ChatMessage[]): number[];
  stats(): Promise<EngineStats>;
  /** Clears the per-step timings of `stats()`. */
  resetStats(): Promise<void>;
  /** Empties the IndexedDB shard cache (every model's). */
  clearCache(): Promise<void>;
  /** Frees every device and worker. */
  dispose(): Promise<void>;
}

/** A placement's ranks as they run: the activations chosen for it, the options and the memory sizes that follow. */
interface PlacedRun {
  choice: ActivationChoice;
  rank: RankOptions;
  sizes: CpuStateSizes;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_TAB_JOIN_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_CONTEXT = 4096;

export async function createEngine(options: EngineOptions): Promise<Engine> {
  if (typeof crossOriginIsolated !== 'undefined' && !crossOriginIsolated) throw new NotIsolatedError();
  if (typeof SharedArrayBuffer === 'undefined') throw new NotIsolatedError();
  // Only a rank that runs on WebGPU needs it: placement finds CPU ranks where it is missing.
  const hasGpu = typeof navigator !== 'undefined' && 'gpu' in navigator;

  const t0 = performance.now();
  const kvCache = checkKvCacheOption(options.kvCache);
  let config: ModelConfig, tensors: TensorInfo[], source: ByteSource, tokenizer: EngineTokenizer;
  let slidingWindow: number | undefined;
  let format: ModelLayout['format'] | 'hf' | 'gguf' = 'hf';
  if (isHfModelOption(options.model)) {
    const hf = await openHfForEngine(options.model, options.tokenizer);
    ({ config, tensors, source } = hf.model);
    ({ tokenizer } = hf);
    slidingWindow = hf.model.slidingWindow;
  } else {
    source = openSource(options.model);
    const [size, head] = await Promise.all([source.size(), source.head(MODEL_HEADER_BYTES)]);
    if (detectFormat(head) === 'gguf') {
      ({ config, tensors, source, tokenizer } = await openGgufForEngine(source, options.tokenizer));
      format = 'gguf';
    } else {
      if (options.tokenizer === undefined) throw new InvalidArgumentError('a llama2.c model needs a tokenizer', 'Pass tokenizer: the tokenizer.bin (or tokenizer.json) that goes with the model');
      ({ config, tensors, format } = parseModelHeader(head, size));
      tokenizer = parseTokenizer(await readAll(options.tokenizer), config.vocabSize);
    }
  }
  notAborted(options.signal);
  const contextLength = options.maxContext ?? Math.min(config.seqLen, DEFAULT_MAX_CONTEXT);
  if (!Number.isInteger(contextLength) || contextLength < 2) throw new InvalidArgumentError(`maxContext must be a whole number ≥ 2, got ${contextLength}`, `Leave maxContext unset (the model's ${config.seqLen} positions, at most ${DEFAULT_MAX_CONTEXT}), or pass 2..${config.seqLen}`);
  // Positions past the trained context get RoPE angles the model never saw: refused, not degraded.
  if (contextLength > config.seqLen) {
    throw new InvalidArgumentError(`maxContext ${contextLength} exceeds the model's trained context of ${config.seqLen} positions (seq_len, max_position_embeddings)`, `Pass maxContext ≤ ${config.seqLen}, or leave it unset`);
  }
  if (slidingWindow !== undefined && contextLength > slidingWindow) {
    throw new InvalidArgumentError(`maxContext ${contextLength} exceeds the model's sliding_window ${slidingWindow}, which attention does not implement`, `Pass maxContext ≤ ${slidingWindow}`);
  }
  if (options.maxRows !== undefined && (!Number.isInteger(options.maxRows) || options.maxRows < 1)) {
    throw new InvalidArgumentError(`maxRows must be a whole number ≥ 1, got ${options.maxRows}`, 'Leave maxRows unset (64), or pass the largest prefill chunk to run in one step');
  }
  if (options.timeoutMs !== undefined) positive('timeoutMs', options.timeoutMs);
  if (options.spin !== undefined && !(options.spin >= 0 && Number.isFinite(options.spin))) {
    throw new InvalidArgumentError(`spin must be a finite number ≥ 0, got ${options.spin}`, 'Leave spin unset, or pass 0 to never spin');
  }
  const maxRows = Math.min(options.maxRows ?? 64, contextLength);
  const maxBatch = options.maxBatch ?? 4;
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new InvalidArgumentError(`maxBatch must be a whole number ≥ 1, got ${maxBatch}`, 'Leave maxBatch unset (4), or pass how many requests to decode together');
  const common = {
    maxRows, slots: maxBatch, contextLength,
    spin: options.spin,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    profile: options.profile ?? false,
    // runq.c's order is llama2.c v2's contract; other int8 runs all-reduce (and Q4_0 cannot chain).
    runqExact: format === 'llama2c-v2' && (options.runqExact ?? true),
    kvCache,
  };
  // The options as every rank of a placement runs them: its kinds of rank decide the activations.
  const runFor = (specs: Placement['specs']): PlacedRun => {
    const choice = resolveActivations(options, format, tensors, specs.map(isCpuSpec));
    const rank: RankOptions = { ...common, activations: choice.activations };
    return { choice, rank, sizes: { contextLength, maxBatch, maxRows, kvBytes: kvCache === 'f16' ? 2 : 4, int8Activations: choice.activations === 'int8' } };
  };
  // Placement weighs CPU ranks as they would run: in a placement of CPU ranks alone.
  const asCpu = runFor([{ cpu: true }]);
  // Ranks in other tabs lend their GPUs: without a devices option they are GPU ranks, as before "auto".
  const devices = options.devices ?? (options.tabs ? 'gpu' : 'auto');
  const decision = await placeRanks(
    { devices, tensorParallel: options.tensorParallel, split: options.split },
    config, asCpu.sizes,
    // Never called for CPU ranks, so only an engine with GPU ranks reaches navigator.gpu.
    (spec) => browserProbe((navigator as Navigator & { gpu: GPU }).gpu)(spec),
    calibrateDevices,
    { hasGpu, cores: navigator.hardwareConcurrency || 1, cpuBlocker: cpuBlocker(tensors, asCpu.rank), tensors, kvBytes: asCpu.sizes.kvBytes },
  );
  const planOf = (p: Placement) => makePlan(config, { tensorParallel: p.specs.length, fractions: p.fractions, axes: p.axes }, tensors);
  const loadGroup = async (p: Placement, plan: Plan, run: PlacedRun, tabs?: TabRanksOptions) => {
    notAborted(options.signal);
    try {
      return await WorkerGroup.create({
        config, plan, source, rank: run.rank,
        onProgress: options.onProgress,
        signal: options.signal,
        cache: options.cache ?? true,
        devices: p.specs,
        adapterKeys: p.keys,
        tabs,
      });
    } catch (e) {
      throw rankMemoryAtDegree(e, config, tensors, plan, run.sizes);
    }
  };
  let placement: Placement, plan: Plan, group: WorkerGroup, tabs: TabRanksOptions | undefined;
  if ('candidates' in decision) {
    // "auto" found several placements it can tell apart only by running them.
    if (options.tabs) throw new InvalidArgumentError('tabs cannot be combined with devices: "auto"', 'Give the rank count with tensorParallel (local ranks plus tab ranks)');
    // Each candidate is timed as it would run, its activations included.
    ({ placement, group } = await loadFastest(decision, async (p, i) => {
      const pl = planOf(p);
      const run = runFor(p.specs);
      try {
        checkCpuRanksFit(config, tensors, pl, p.specs.map(isCpuSpec), run.sizes);
      } catch (e) {
        // The baseline must load; a later candidate that does not fit is only left out.
        if (i === 0 || !(e instanceof RankMemoryError)) throw e;
        return undefined;
      }
      return loadGroup(p, pl, run);
    }));
    plan = planOf(placement);
  } else {
    placement = decision;
    tabs = options.tabs && tabRanks(options.tabs, options.model, format, placement.specs.length, options.devices ?? options.tensorParallel);
    plan = planOf(placement);
    const run = runFor(placement.specs);
    // A CPU rank too large for its memory fails here, before anything loads.
    checkCpuRanksFit(config, tensors, plan, placement.specs.map(isCpuSpec), run.sizes);
    group = await loadGroup(placement, plan, run, tabs);
  }
  if (options.signal?.aborted) {
    await group.dispose();
    notAborted(options.signal);
  }
  const loadMs = performance.now() - t0;
  const names = group.adapterNames();
  const { choice } = runFor(placement.specs);
  const report: DevicePlacement = {
    ...placement.report,
    activations: choice.activations,
    activationsReason: choice.reason,
    fractions: plan.ranks.map((r) => (r.heads[1] - r.heads[0]) / config.nHeads),
    ranks: plan.ranks.map((r) => ({
      rank: r.rank,
      backend: backendOf(placement.specs[r.rank]),
      spec: tabs && r.rank >= plan.world - tabs.count ? `tab "${tabs.id}"` : describeSpec(placement.specs[r.rank]),
      adapter: names[r.rank] ?? '', heads: r.heads, hidden: r.hidden, vocab: r.vocab,
    })),
  };
  const engine = assembleEngine(config, plan.world, group, tokenizer, async () => group.stats(), () => group.dispose(), () => group.resetStats(), source.name);
  const out: Engine = {
    ...engine,
    async stats() {
      const s = await engine.stats();
      return { ...s, loadMs, placement: report, warnings: [...group.warnings, ...s.warnings] };
    },
  };
  registerFaultTarget(out, group);
  return out;
}

/** Builds the `Engine` surface over any step backend (the workers, or the CPU oracle in tests). */
export function assembleEngine(
  config: ModelConfig,
  tensorParallel: number,
  backend: StepBackend,
  tokenizerIn: Tokenizer | EngineTokenizer,
  rankStats: () => Promise<EngineStats['ranks']>,
  disposeBackend: () => Promise<void>,
  resetBackendStats: () => Promise<void> = async () => {},
  modelName = 'webgpu-tp',
): Engine {
  const makeSampler: SamplerFactory = (params) => new TokenSampler(config.vocabSize, params);
  const tokenizer = tokenizerIn instanceof Tokenizer ? llama2cTokenizer(tokenizerIn) : tokenizerIn;
  // Prompt ids are checked against the model's embedding rows, whichever tokenizer it has.
  const scheduler = new Scheduler(backend, { ...tokenizer, vocabSize: config.vocabSize }, makeSampler);
  let disposed = false;
  const guard = () => {
    if (disposed) throw new DisposedError();
  };
  const generate = (prompt: string, opts?: GenerateOptions) => {
    guard();
    return scheduler.generate(prompt, opts);
  };
  const generateTokens = (tokens: number[], opts?: GenerateOptions) => {
    guard();
    return scheduler.generateTokens(tokens, opts);
  };
  const encodeChat = (messages: readonly ChatMessage[]): number[] => {
    if (!tokenizer.applyChatTemplate) throw new TokenizerFormatError('this tokenizer has no chat template', 'Use a tokenizer.json whose tokenizer_config.json has a chat_template, or engine.completions with a plain prompt');
    return tokenizer.encode(tokenizer.applyChatTemplate(messages), false, false);
  };
  return {
    config,
    tensorParallel,
    generate,
    completions: createCompletions(generate, modelName),
    chat: { completions: createChatCompletions(encodeChat, generateTokens, modelName) },
    encodeChat,
    clearCache: () => clearShardCache(),
    generateTokens,
    encode: (text) => tokenizer.encode(text, true, false),
    async stats() {
      guard();
      const ranks = await rankStats();
      const schedulerMs = scheduler.schedulerMs;
      for (const r of ranks) r.breakdown.scheduler_ms = schedulerMs;
      return { tensorParallel, loadMs: 0, ranks, schedulerMs, prefixCache: scheduler.prefixCache, warnings: ranks.flatMap((r) => r.warnings.map((w) => `rank ${r.rank}: ${w}`)) };
    },
    async resetStats() {
      guard();
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

function notAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError('model load aborted');
}

/** Throws unless `v` is a finite number > 0 (a NaN timeout would never expire). */
function positive(name: string, v: number): void {
  if (!(v > 0 && Number.isFinite(v))) throw new InvalidArgumentError(`${name} must be a finite number of milliseconds > 0, got ${v}`, `Leave ${name} unset for the default`);
}

/** Checks the `tabs` option and says what a tab rank loads: an absolute URL (it fetches), or a Blob (posted to it). */
function tabRanks(
  t: NonNullable<EngineOptions['tabs']>, model: EngineOptions['model'], format: ModelLayout['format'] | 'hf' | 'gguf', world: number,
  placement: EngineOptions['devices'] | EngineOptions['tensorParallel'],
): TabRanksOptions {
  if (typeof t !== 'object' || typeof t.id !== 'string' || t.id === '') throw new InvalidArgumentError(`tabs.id must be a non-empty string, got ${JSON.stringify(t?.id)}`);
  if (!Number.isInteger(t.count) || t.count < 1 || t.count > world) {
    throw new InvalidArgumentError(`tabs.count must be a whole number in 1..${world} (the rank count), got ${t.count}`, 'Raise tensorParallel to the local ranks plus the tab ranks');
  }
  if (placement === 'auto') throw new InvalidArgumentError('tabs cannot be combined with devices: "auto"', 'Give the rank count with tensorParallel (local ranks plus tab ranks)');
  const joinTimeoutMs = t.timeoutMs ?? DEFAULT_TAB_JOIN_TIMEOUT_MS;
  positive('tabs.timeoutMs', joinTimeoutMs);
  // A tab rank streams the file itself and cuts its shard by the plan's byte ranges, which are
  // llama2.c offsets: a GGUF's ranges are into the converted stream the host reads.
  if (isHfModelOption(model) || format === 'hf' || format === 'gguf') {
    throw new InvalidArgumentError(`ranks in other tabs need a llama2.c model (a URL, File/Blob or buffer), not ${format === 'gguf' ? 'a GGUF file' : 'a Hugging Face directory'}`, 'Convert the model to llama2.c format for tab ranks, or run every rank in this page');
  }
  const forTab =
    typeof model === 'string' || model instanceof URL ? new URL(String(model), location.href).href
    : model instanceof Blob ? model
    : new Blob([model instanceof Uint8Array ? model.slice() : model]);
  return { id: t.id, count: t.count, joinTimeoutMs, model: forTab };
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
