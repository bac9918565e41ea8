/**
 * `webgpu-tp bench generate`: decode and prefill speed of the real engine in headless Chromium,
 * per TP degree, with where each decode step's time goes. With `quant`, the model is a synth
 * checkpoint of `shape` written as one GGUF per quantisation, and each result carries its decode
 * speed against f32's.
 */
import { openHarness } from './browser.js';
import { mountInput, runGenerate } from './generate.js';
import { closeSync, fstatSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EngineStats, StepBreakdown } from '../engine/types.js';
import type { ModelConfig } from '../model/config.js';
import { detectFormat, MODEL_HEADER_BYTES, parseModelHeader } from '../model/formats/detect.js';
import { readGguf } from '../model/formats/gguf.js';
import { GGUF_QUANTS, type GgufQuant } from '../model/formats/gguf-write.js';
import type { SynthShape } from '../model/synth.js';
import { InvalidArgumentError, reviveError, WebGpuTpError, type SerializedError } from '../errors.js';
import { synthCommand } from './synth.js';
import { median } from '../collective/bench.js';
import type { PageConcurrentResult, PageGenerateOptions } from './page/types.js';
import { benchCases, devicesFor, type CliDevices } from './devices.js';
import { backendOf, rankReports, type RankReport } from './ranks.js';
import type { RankBackend } from '../engine/types.js';
import { concatReads, readFigures, type ReadSamples, type WasmReadFigures } from './read-figures.js';

type PageWindow = {
  tp: {
    engine: {
      timedConcurrent(o: PageGenerateOptions, r: { prompt: string; maxTokens: number }[]): Promise<PageConcurrentResult | { error: SerializedError }>;
      disposeAll(): Promise<void>;
    };
    cpu: { openRead(bytes: number): Promise<number>; measureRead(samples: number): Promise<ReadSamples>; closeRead(): void };
  };
};

export interface BenchGenerateOptions {
  /** A model file or directory; with `quant`, unused (synth GGUF files are written). */
  model?: string;
  /** Required unless the model is a GGUF. */
  tokenizer?: string;
  /**
   * Quantisations to compare (GGUF_QUANTS: `f32`, `f16`, `q8_0`, `q4_0`, and llama-quantize's
   * mixes `q4_k_m`, `q5_k_m`, `q6_k`), each a synth GGUF of `shape`;
   * `QUANT` runs that GGUF with the engine's default activations, `QUANT+int8` with int8 ones
   * (engine int8Activations: true, W4A8 / W8A8), `QUANT+f32` weight-only (int8Activations: false).
   */
  quant?: string[];
  /** Synth shape for `quant` (default stories110M). */
  shape?: SynthShape;
  /**
   * Devices configurations compared in one run (`--devices`, once per configuration), each at
   * every degree of `tp` unless it fixes its own (see `benchCases`). Default: the engine's.
   */
  devices?: CliDevices[];
  /** TP degrees (default 1 and 2). */
  tp?: number[];
  maxTokens: number;
  /** Prompt to prefill (default: a short story opening). */
  prompt?: string;
  /** Collective spin iterations to use (default: the engine's). */
  spin?: number;
  /** Concurrent streams per run (continuous batching); default [1]. */
  batch?: number[];
  /** Also run each case briefly with per-kernel GPU timing (timestamp queries). */
  profile?: boolean;
  /**
   * Timed runs per case (default 1). Above 1 the cases run in interleaved rounds; each result is
   * the round of median rate, with every round's rate. With several cases every round reloads
   * their engines, in an order rotated round by round.
   */
  rounds?: number;
  /** W8A8: runq.c's arithmetic bit for bit (default: the engine's, true). */
  runqExact?: boolean;
  /** What the KV cache stores (default: the engine's, auto). */
  kvCache?: PageGenerateOptions['kvCache'];
  /** Int8 activations for quantised matrices (engine int8Activations; default: the engine's). */
  int8Activations?: boolean;
  /** f32 activations for every format (engine weightOnly). */
  weightOnly?: boolean;
}

export interface BenchGenerateResult {
  /** The GGUF quantisation (`quant` runs). */
  quant?: GgufQuant;
  /** 'int8' for a `QUANT+int8` run, 'f32' for a `QUANT+f32` one; absent: the engine's default (`ranks_activations` says which ran). */
  activations?: 'int8' | 'f32';
  /** The activations the ranks ran (stats().placement.activations). */
  ranks_activations?: 'int8' | 'f32';
  /** The `--devices` value of the case; absent: the engine's default devices. */
  devices?: string;
  /** cpu or gpu when every rank is of that kind, else mixed. */
  backend: RankBackend | 'mixed';
  ranks: RankReport[];
  tp: number;
  batch: number;
  /** Decode tokens/s of all streams together. */
  aggregate_tokens_per_s: number;
  /** With `rounds` > 1: aggregate_tokens_per_s of each round, in order. */
  rounds_tokens_per_s?: number[];
  /**
   * At TP > 1 in a run that includes TP = 1: aggregate tokens/s over TP = 1's at the same batch,
   * round by round, the median of those ratios (one machine's slow spells cancel out).
   */
  vs_tp1?: number;
  /** At batch > 1 in a run that includes batch 1: aggregate over batch 1's, same case, median of the rounds' ratios. */
  vs_batch1?: number;
  /** With several `devices`: aggregate over the run's first case's (`first`) at the same batch, median of the rounds' ratios. */
  vs_first?: number;
  /**
   * Cases with CPU ranks: decode steps per second (decode_tokens_per_s) over the report's
   * `roofline.roofline_tokens_per_s`, round by round, the median.
   */
  vs_roofline?: number;
  /** Prompt tokens of one stream (every stream of a batch has the same prompt). */
  prompt_tokens: number;
  tokens: number;
  /** Batch 1 only: the streams of a batch prefill while others decode, so no rate is theirs alone. */
  prefill_tokens_per_s?: number;
  decode_tokens_per_s: number;
  /** Means per decode step, rank 0's view (ms). */
  breakdown_ms: StepBreakdown;
  /** At TP > 1: every rank's `breakdown_ms`, by rank (a slower rank shows as less all-reduce wait). */
  ranks_breakdown_ms?: StepBreakdown[];
  /** Median ms from one sync point's readback start to its upload done (rank 0). */
  allreduce_roundtrip_ms: number;
  load_ms: number;
  /** With several cases in `rounds` > 1: each round's load of this engine (every round reloads), in order. */
  rounds_load_ms?: number[];
  adapter: string;
  /** From a separate short profiled run (`--profile`): each kernel in its own timestamped pass. */
  profile?: KernelProfileResult;
  /** decode_tokens_per_s over f32's at the same TP and batch (`quant` runs that include f32). */
  decode_vs_f32?: number;
}

export interface KernelProfileResult {
  /** Decode steps profiled. */
  steps: number;
  /** Rank 0's GPU ms per step, by kernel kind (every layer's together). */
  kernels_ms_per_step: Record<string, number>;
  gpu_ms_per_step: number;
  /**
   * Every rank's GPU ms per step by kernel kind, rank order. On one shared CPU adapter the ranks'
   * kernels run on the same cores, so their sum, not rank 0's alone, is what TP = 1 competes with.
   */
  ranks_kernels_ms_per_step?: Record<string, number>[];
  /** Matmul FLOPs per step over the matmuls' GPU time: the arithmetic rate one device reached. */
  matmul_gflops: number;
}

/** The memory roofline of a run with CPU ranks: the weights' bytes read by one and by two threads. */
export interface GenerateRoofline {
  /** Weight bytes a decode step reads (every matrix once, the classifier included). */
  weight_bytes: number;
  read: WasmReadFigures;
  /** weight_bytes over the two-thread read rate: no f32 decode on two cores passes it. */
  roofline_tokens_per_s: number;
}

export interface BenchGenerateReport {
  model: string;
  max_tokens: number;
  results: BenchGenerateResult[];
  /** The case `vs_first` divides by (runs with several `devices`). */
  first?: { devices?: string; tp: number };
  /** Runs with CPU ranks (f32 or f16 weights). */
  roofline?: GenerateRoofline;
  /** Quantisations that could not run, with their typed error. */
  failed?: { quant: GgufQuant; activations?: 'int8' | 'f32'; code: string; message: string }[];
}

const DEFAULT_PROMPT = 'Once upon a time, there was a little girl who loved to play in the park with her friends.';

export async function benchGenerate(o: BenchGenerateOptions): Promise<BenchGenerateReport> {
  if (o.quant) return benchQuant(o, o.quant);
  if (!o.model) throw new InvalidArgumentError('bench generate needs a model (or --quant)');
  const config = await readConfig(o.model);
  if (!o.tokenizer && !o.model.endsWith('.gguf')) throw new InvalidArgumentError('bench generate needs --tokenizer for a llama2.c model');
  const h = await openHarness({ bench: true });
  try {
    const run = await benchModel(h, o, config, mountInput(h, 'model', o.model), o.tokenizer && mountInput(h, 'tokenizer', o.tokenizer));
    return { model: o.model, max_tokens: o.maxTokens, ...run };
  } finally {
    await h.close();
  }
}

/** One synth GGUF per quantisation, each measured like a model; decode speed against f32's. */
async function benchQuant(o: BenchGenerateOptions, quants: string[]): Promise<BenchGenerateReport> {
  const runs = quants.map((q) => {
    const forced = /\+(int8|f32)$/.exec(q)?.[1] as 'int8' | 'f32' | undefined;
    return { name: q, quant: (forced ? q.slice(0, -forced.length - 1) : q) as GgufQuant, forced };
  });
  const bad = runs.filter((r) => !(GGUF_QUANTS as readonly string[]).includes(r.quant)).map((r) => r.name);
  if (bad.length) throw new InvalidArgumentError(`--quant takes ${GGUF_QUANTS.join(', ')}, each optionally with +int8 or +f32 (got ${bad.join(', ')})`);
  const shape = o.shape ?? 'stories110M';
  const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-bench-gguf-'));
  // Ctrl-C ends the process without running `finally`; the synth GGUFs are up to ~440 MB each.
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  process.once('exit', cleanup);
  let h: Awaited<ReturnType<typeof openHarness>> | undefined;
  try {
    h = await openHarness({ bench: true });
    const results: BenchGenerateResult[] = [];
    const failed: NonNullable<BenchGenerateReport['failed']> = [];
    // One synth file per quantisation, kept while a later run still uses it.
    const paths = new Map<GgufQuant, string>();
    for (const [i, run] of runs.entries()) {
      const { quant } = run;
      let path = paths.get(quant);
      if (!path) {
        const { gguf } = await synthCommand({ shape, seed: 1, out: dir, format: 'gguf', quant: [quant] });
        path = gguf![quant]!;
        paths.set(quant, path);
      }
      try {
        const int8Activations = run.forced ? run.forced === 'int8' : o.int8Activations;
        const rs = (await benchModel(h, { ...o, int8Activations }, await readConfig(path), mountInput(h, 'model', path), undefined)).results;
        results.push(...rs.map((r) => ({ quant, ...(run.forced && { activations: run.forced }), ...r })));
      } catch (e) {
        if (!(e instanceof WebGpuTpError)) throw e;
        failed.push({ quant, ...(run.forced && { activations: run.forced }), code: e.code, message: e.message });
      } finally {
        if (!runs.slice(i + 1).some((r) => r.quant === quant)) rmSync(path, { force: true });
      }
    }
    for (const r of results) {
      const f32 = results.find((x) => x.quant === 'f32' && !x.activations && x.tp === r.tp && x.batch === r.batch);
      if (f32 && f32.decode_tokens_per_s > 0) r.decode_vs_f32 = r.decode_tokens_per_s / f32.decode_tokens_per_s;
    }
    return { model: `${shape}-synth (GGUF ${quants.join(', ')})`, max_tokens: o.maxTokens, results, ...(failed.length ? { failed } : {}) };
  } finally {
    await h?.close();
    cleanup();
    process.off('exit', cleanup);
  }
}

type Case = ReturnType<typeof benchCases>[number];
type ModelRun = Pick<BenchGenerateReport, 'results' | 'first' | 'roofline'>;

/** Read samples per round of the roofline (one-thread and two-thread reads, one and two streams each). */
const READ_SAMPLES = 3;

/** Every (devices, tp, batch) case of one model, mounted in the harness page. */
async function benchModel(
  h: Awaited<ReturnType<typeof openHarness>>, o: BenchGenerateOptions, config: ModelConfig, model: string, tokenizer: string | undefined,
): Promise<ModelRun> {
  const batches = o.batch ?? [1];
  const maxBatch = Math.max(...batches);
  const prompt = o.prompt ?? DEFAULT_PROMPT;
  const rounds = Math.max(1, o.rounds ?? 1);
  const cases = benchCases(o.devices, o.tp);
  // Interleaved rounds keep every case's engine loaded, so a round measures them back to back.
  const keepEngines = rounds > 1 ? cases.length : 1;
  const common = (c: Case, profile: boolean): Omit<PageGenerateOptions, 'maxTokens'> => ({
    model, tokenizer, tp: c.tp, devices: c.devices && devicesFor(c.devices, c.tp), prompt, temperature: 0, topP: 0.9, seed: 1, ignoreEos: true, spin: o.spin, maxBatch, profile,
    runqExact: o.runqExact, int8Activations: o.int8Activations, weightOnly: o.weightOnly, kvCache: o.kvCache, keepEngines,
    // A 64-row prefill step of a large model can take minutes on a CPU adapter.
    timeoutMs: 600_000,
  });
  // Each case's loads, one a round where every round reloads (the first is its load_ms).
  const loads = new Map<Case, number[]>();
  const warm = new Map<Case, EngineStats>();
  const runs = new Map<string, Measured[]>();
  const key = (c: Case, batch: number) => `${cases.indexOf(c)}:${batch}`;
  // The roofline's bytes are known once an engine with CPU ranks has loaded (its weights' dtype).
  let readBytes: number | undefined;
  const reads: ReadSamples[] = [];
  const readRound = async (samples: number) => {
    if (readBytes === undefined) {
      const bytes = rooflineBytes(config, [...warm.values()]);
      if (bytes === undefined) return;
      readBytes = await h.page.evaluate((b) => (window as unknown as PageWindow).tp.cpu.openRead(b), bytes);
    }
    reads.push(await h.page.evaluate((n) => (window as unknown as PageWindow).tp.cpu.measureRead(n), samples));
  };
  try {
    // One round: each case warmed then measured (one engine at a time). Several: each round
    // runs every case once, and the roofline once, so slow spells of a noisy machine hit them
    // all. An engine's speed is fixed when it loads (identical engines in one page differed up
    // to 1.3×, the first loaded slowest: bench/NOTES.md, h/f32gap), so with several cases each
    // round loads them afresh, in an order rotated round by round.
    for (const group of rounds > 1 ? [cases] : cases.map((c) => [c])) {
      for (let r = 0; r < rounds; r++) {
        const order = group.map((_, i) => group[(i + r) % group.length]!);
        if (r > 0 && group.length > 1) await h.page.evaluate(() => (window as unknown as PageWindow).tp.engine.disposeAll());
        // Warm-up: loads the engine and compiles every pipeline; the measured runs reuse it.
        for (const c of r === 0 || group.length > 1 ? order : []) {
          const w = await runGenerate(h, { ...common(c, false), maxTokens: 4 });
          loads.set(c, [...(loads.get(c) ?? []), w.timings.load_ms]);
          if (r === 0) warm.set(c, w.stats);
        }
        for (const c of order) {
          for (const batch of batches) runs.set(key(c, batch), [...(runs.get(key(c, batch)) ?? []), await measure(h, common(c, false), batch, o.maxTokens)]);
        }
        if (rounds > 1) await readRound(READ_SAMPLES);
      }
    }
    if (rounds === 1) await readRound(2 * READ_SAMPLES);
  } finally {
    if (readBytes !== undefined) await h.page.evaluate(() => (window as unknown as PageWindow).tp.cpu.closeRead());
  }
  const roofline = readBytes === undefined ? undefined : generateRoofline(readBytes, reads);
  const first = cases[0]!;
  const results: BenchGenerateResult[] = [];
  for (const c of cases) {
    for (const batch of batches) {
      const all = runs.get(key(c, batch))!;
      const run = medianRun(all);
      const r0 = run.stats.ranks[0]!;
      const ranks = rankReports(run.stats);
      const tp = run.stats.tensorParallel;
      const same = (d: Case) => d.devices?.text === c.devices?.text;
      const tp1 = c.tp !== 1 ? cases.find((d) => same(d) && d.tp === 1) : undefined;
      const vs = (base: Measured[] | undefined) => base && median(all.map((x, i) => x.aggregate / base[i]!.aggregate));
      const vsTp1 = tp1 && vs(runs.get(key(tp1, batch)));
      const vsBatch1 = batch !== 1 ? vs(runs.get(key(c, 1))) : undefined;
      const vsFirst = o.devices && o.devices.length > 1 && c !== first ? vs(runs.get(key(first, batch))) : undefined;
      const vsRoofline = roofline && ranks.some((x) => x.backend === 'cpu') ? rooflineShare(all, batch, readBytes!, reads) : undefined;
      results.push({
        ...(c.devices && { devices: c.devices.text }), backend: backendOf(ranks), ranks,
        ...(run.stats.placement && { ranks_activations: run.stats.placement.activations }),
        tp, batch, aggregate_tokens_per_s: run.aggregate,
        ...(rounds > 1 && { rounds_tokens_per_s: all.map((x) => x.aggregate) }),
        ...(vsTp1 !== undefined && { vs_tp1: vsTp1 }),
        ...(vsBatch1 !== undefined && { vs_batch1: vsBatch1 }),
        ...(vsFirst !== undefined && { vs_first: vsFirst }),
        ...(vsRoofline !== undefined && { vs_roofline: vsRoofline }),
        prompt_tokens: run.promptTokens, tokens: run.tokens,
        ...(run.prefill !== undefined && { prefill_tokens_per_s: run.prefill }), decode_tokens_per_s: run.aggregate / batch,
        breakdown_ms: r0.breakdown, ...(tp > 1 && { ranks_breakdown_ms: run.stats.ranks.map((r) => r.breakdown) }),
        allreduce_roundtrip_ms: r0.allreduceRoundtripMs, load_ms: loads.get(c)![0]!,
        ...(rounds > 1 && cases.length > 1 && { rounds_load_ms: loads.get(c)! }), adapter: r0.adapter,
      });
    }
  }
  const out: ModelRun = {
    results,
    ...(o.devices && o.devices.length > 1 && { first: { devices: first.devices?.text, tp: results[0]!.tp } }),
    ...(roofline && { roofline }),
  };
  if (!o.profile) return out;
  for (const c of cases) {
    // Timestamp queries time GPU kernels; CPU ranks have none to time.
    if (!rankReports(warm.get(c)!).some((r) => r.backend === 'gpu')) continue;
    const co = common(c, true);
    await runGenerate(h, { ...co, maxTokens: 4 });
    for (const [bi, batch] of batches.entries()) {
      // The profiled pass is short: it only needs enough steps for stable per-kernel means. A
      // batch needs its full length: its streams start a step apart, and the profile should
      // cover steps in which all of them decode (the measured window), not the ramp.
      const run = await measure(h, co, batch, batch === 1 ? Math.min(o.maxTokens, 8) : o.maxTokens);
      const row = results[cases.indexOf(c) * batches.length + bi]!;
      row.profile = kernelProfile(config, row.tp, batch, run.stats);
    }
  }
  return out;
}

/** Matmul weights per layer (q, k, v, o, and the MLP's three) and the classifier, in elements. */
function matmulElements(c: ModelConfig): { perLayer: number; classifier: number } {
  const q = c.nHeads * c.headSize;
  const kv = c.nKvHeads * c.headSize;
  return { perLayer: (q + 2 * kv) * c.dim + c.dim * q + 3 * c.hiddenDim * c.dim, classifier: c.vocabSize * c.dim };
}

/**
 * Bytes of weights one decode step reads: every matrix once, the classifier included (the
 * norms' few KB left out). Undefined unless some loaded engine has CPU ranks with f32 or f16 weights.
 */
function rooflineBytes(config: ModelConfig, loaded: EngineStats[]): number | undefined {
  const cpu = loaded.find((s) => rankReports(s).some((r) => r.backend === 'cpu'));
  const dtype = cpu?.ranks[0]?.precision.weights;
  const size = dtype === 'f32' ? 4 : dtype === 'f16' ? 2 : undefined;
  if (size === undefined) return undefined;
  const m = matmulElements(config);
  return size * (config.nLayers * m.perLayer + m.classifier);
}

function generateRoofline(bytes: number, reads: ReadSamples[]): GenerateRoofline {
  const read = readFigures(bytes, concatReads(reads));
  return { weight_bytes: bytes, read, roofline_tokens_per_s: 1000 / read.two_threads.median_ms };
}

/** Decode steps/s over the roofline's, round by round where each round had its reads; the median. */
function rooflineShare(all: Measured[], batch: number, bytes: number, reads: ReadSamples[]): number {
  const limit = (r: ReadSamples[]) => generateRoofline(bytes, r).roofline_tokens_per_s;
  if (reads.length === all.length) return median(all.map((x, i) => x.aggregate / batch / limit([reads[i]!])));
  return median(all.map((x) => x.aggregate / batch)) / limit(reads);
}

interface Measured { aggregate: number; prefill?: number; promptTokens: number; tokens: number; stats: EngineStats }

/** The run whose rate is the median of the rounds (the lower middle of an even count). */
function medianRun(all: Measured[]): Measured {
  const sorted = [...all].sort((a, b) => a.aggregate - b.aggregate);
  return sorted[(sorted.length - 1) >> 1]!;
}

/** One timed generation of `batch` concurrent streams (one stream: the plain generate path). */
async function measure(
  h: Awaited<ReturnType<typeof openHarness>>, common: Omit<PageGenerateOptions, 'maxTokens'>, batch: number, maxTokens: number,
): Promise<Measured> {
  if (batch === 1) {
    const r = await runGenerate(h, { ...common, maxTokens });
    return { aggregate: r.timings.decode_tokens_per_s, prefill: r.timings.prefill_tokens_per_s, promptTokens: r.prompt_tokens.length, tokens: r.tokens.length, stats: r.stats };
  }
  const requests = Array.from({ length: batch }, () => ({ prompt: common.prompt, maxTokens }));
  const r = await h.page.evaluate(([opts, reqs]) => (window as unknown as PageWindow).tp.engine.timedConcurrent(opts, [...reqs]), [{ ...common, maxTokens }, requests] as const);
  if ('error' in r) throw reviveError(r.error);
  // Streams too short to decode past the start step (the step giving the last its first token) timed nothing.
  if (r.decodeTokens === 0) {
    throw new InvalidArgumentError(`bench generate --batch ${batch}: the timed decode window held no step (--max-tokens ${maxTokens} is too short for this engine); raise --max-tokens`);
  }
  return {
    aggregate: r.decodeTokens / Math.max(r.decodeMs / 1000, 1e-9),
    promptTokens: r.promptTokens, tokens: r.tokens.reduce((a, t) => a + t.length, 0), stats: r.stats,
  };
}

/** The config of a llama2.c (either version) or GGUF checkpoint on disk (for the matmul FLOP count). */
async function readConfig(path: string): Promise<ModelConfig> {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const at = (start: number, end: number): Uint8Array => {
      const b = new Uint8Array(Math.max(0, Math.min(end, size) - start));
      return b.subarray(0, readSync(fd, b, 0, b.byteLength, start));
    };
    const read = async (n: number): Promise<Uint8Array> => at(0, n);
    const head = await read(MODEL_HEADER_BYTES);
    // range() lets a Llama 3.1 GGUF's rope_freqs, stored after the output matrix, be read alone.
    if (detectFormat(head) === 'gguf') return (await readGguf({ name: path, size: async () => size, head: read, range: async (s, e) => at(s, e) })).config;
    return parseModelHeader(head, size).config;
  } finally {
    closeSync(fd);
  }
}

/**
 * Rank 0's GPU time per decode step by kernel kind, and the arithmetic rate its matmuls reached:
 * 2·rows·N·K FLOPs per matmul over the matmuls' GPU time. With an even split every rank does
 * rank 0's share, so this is the rate of one device. At TP > 1 every rank's kernel times too
 * (`ranks_kernels_ms_per_step`).
 */
export function kernelProfile(c: ModelConfig, tp: number, batch: number, stats: EngineStats): KernelProfileResult | undefined {
  const r0 = stats.ranks[0];
  if (!r0?.kernels || r0.steps === 0) return undefined;
  const steps = r0.steps;
  // Kernel names are unique per rank (the worker's profiler totals them by name).
  const ranks_kernels_ms_per_step = stats.ranks.map((r) => Object.fromEntries((r.kernels ?? []).map((k) => [k.name, k.gpuMs / Math.max(r.steps, 1)])));
  const kernels_ms_per_step = ranks_kernels_ms_per_step[0]!;
  let gpu = 0;
  let matmulMs = 0;
  for (const [name, ms] of Object.entries(kernels_ms_per_step)) {
    gpu += ms;
    if (name.startsWith('matmul')) matmulMs += ms;
  }
  const m = matmulElements(c);
  const flops = (2 * batch * (c.nLayers * m.perLayer + m.classifier)) / tp;
  return {
    steps,
    kernels_ms_per_step,
    gpu_ms_per_step: gpu,
    ...(stats.ranks.length > 1 && { ranks_kernels_ms_per_step }),
    matmul_gflops: matmulMs > 0 ? flops / (matmulMs * 1e6) : 0,
  };
}
