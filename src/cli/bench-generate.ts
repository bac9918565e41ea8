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

type PageWindow = {
  tp: { engine: { timedConcurrent(o: PageGenerateOptions, r: { prompt: string; maxTokens: number }[]): Promise<PageConcurrentResult | { error: SerializedError }> } };
};

export interface BenchGenerateOptions {
  /** A model file or directory; with `quant`, unused (synth GGUF files are written). */
  model?: string;
  /** Required unless the model is a GGUF. */
  tokenizer?: string;
  /**
   * Quantisations to compare (`f32`, `f16`, `q8_0`, `q4_0`), each a synth GGUF of `shape`;
   * `QUANT+int8` runs that GGUF with int8 activations (engine int8Activations: W4A8 / W8A8).
   */
  quant?: string[];
  /** Synth shape for `quant` (default stories110M). */
  shape?: SynthShape;
  tp: number[];
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
   * Timed runs per case (default 1). Above 1 every degree's engine stays loaded and the cases
   * run in interleaved rounds; each result is the round of median rate, with every round's rate.
   */
  rounds?: number;
  /** W8A8: runq.c's arithmetic bit for bit (default: the engine's, true). */
  runqExact?: boolean;
  /** What the KV cache stores (default: the engine's, auto). */
  kvCache?: PageGenerateOptions['kvCache'];
  /** GGUF: int8 activations for quantised matrices (engine int8Activations). */
  int8Activations?: boolean;
}

export interface BenchGenerateResult {
  /** The GGUF quantisation (`quant` runs). */
  quant?: GgufQuant;
  /** 'int8' for a `QUANT+int8` run (int8 activations); absent: the engine's default. */
  activations?: 'int8';
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
  /** Prompt tokens of one stream (every stream of a batch has the same prompt). */
  prompt_tokens: number;
  tokens: number;
  /** Batch 1 only: the streams of a batch prefill while others decode, so no rate is theirs alone. */
  prefill_tokens_per_s?: number;
  decode_tokens_per_s: number;
  /** Means per decode step, rank 0's view (ms). */
  breakdown_ms: StepBreakdown;
  /** Median ms from one sync point's readback start to its upload done (rank 0). */
  allreduce_roundtrip_ms: number;
  load_ms: number;
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

export interface BenchGenerateReport {
  model: string;
  max_tokens: number;
  results: BenchGenerateResult[];
  /** Quantisations that could not run, with their typed error. */
  failed?: { quant: GgufQuant; activations?: 'int8'; code: string; message: string }[];
}

const DEFAULT_PROMPT = 'Once upon a time, there was a little girl who loved to play in the park with her friends.';

export async function benchGenerate(o: BenchGenerateOptions): Promise<BenchGenerateReport> {
  if (o.quant) return benchQuant(o, o.quant);
  if (!o.model) throw new InvalidArgumentError('bench generate needs a model (or --quant)');
  const config = await readConfig(o.model);
  if (!o.tokenizer && !o.model.endsWith('.gguf')) throw new InvalidArgumentError('bench generate needs --tokenizer for a llama2.c model');
  const h = await openHarness({ bench: true });
  try {
    const results = await benchModel(h, o, config, mountInput(h, 'model', o.model), o.tokenizer && mountInput(h, 'tokenizer', o.tokenizer));
    return { model: o.model, max_tokens: o.maxTokens, results };
  } finally {
    await h.close();
  }
}

/** One synth GGUF per quantisation, each measured like a model; decode speed against f32's. */
async function benchQuant(o: BenchGenerateOptions, quants: string[]): Promise<BenchGenerateReport> {
  const runs = quants.map((q) => ({ name: q, quant: q.replace(/\+int8$/, '') as GgufQuant, int8: q.endsWith('+int8') }));
  const bad = runs.filter((r) => !(GGUF_QUANTS as readonly string[]).includes(r.quant)).map((r) => r.name);
  if (bad.length) throw new InvalidArgumentError(`--quant takes ${GGUF_QUANTS.join(', ')}, each optionally with +int8 (got ${bad.join(', ')})`);
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
        const rs = await benchModel(h, { ...o, int8Activations: run.int8 }, await readConfig(path), mountInput(h, 'model', path), undefined);
        results.push(...rs.map((r) => ({ quant, ...(run.int8 && { activations: 'int8' as const }), ...r })));
      } catch (e) {
        if (!(e instanceof WebGpuTpError)) throw e;
        failed.push({ quant, ...(run.int8 && { activations: 'int8' as const }), code: e.code, message: e.message });
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

/** Every (tp, batch) case of one model, mounted in the harness page. */
async function benchModel(
  h: Awaited<ReturnType<typeof openHarness>>, o: BenchGenerateOptions, config: ModelConfig, model: string, tokenizer: string | undefined,
): Promise<BenchGenerateResult[]> {
  const batches = o.batch ?? [1];
  const maxBatch = Math.max(...batches);
  const prompt = o.prompt ?? DEFAULT_PROMPT;
  const rounds = Math.max(1, o.rounds ?? 1);
  // Interleaved rounds keep every degree's engine loaded, so a round measures them back to back.
  const keepEngines = rounds > 1 ? o.tp.length : 1;
  const common = (tp: number, profile: boolean): Omit<PageGenerateOptions, 'maxTokens'> => ({
    model, tokenizer, tp, prompt, temperature: 0, topP: 0.9, seed: 1, ignoreEos: true, spin: o.spin, maxBatch, profile, runqExact: o.runqExact, int8Activations: o.int8Activations, kvCache: o.kvCache, keepEngines,
    // A 64-row prefill step of a large model can take minutes on a CPU adapter.
    timeoutMs: 600_000,
  });
  const loadMs = new Map<number, number>();
  const runs = new Map<string, Measured[]>();
  const key = (tp: number, batch: number) => `${tp}:${batch}`;
  // One round: each degree warmed then measured (one engine at a time). Several: all warmed,
  // then each round runs every case once, so slow spells of a noisy machine hit all degrees.
  for (const group of rounds > 1 ? [o.tp] : o.tp.map((tp) => [tp])) {
    // Warm-up: loads the engine and compiles every pipeline; the measured runs reuse it.
    for (const tp of group) loadMs.set(tp, (await runGenerate(h, { ...common(tp, false), maxTokens: 4 })).timings.load_ms);
    for (let r = 0; r < rounds; r++) {
      for (const tp of group) {
        for (const batch of batches) {
          const run = await measure(h, common(tp, false), batch, o.maxTokens);
          runs.set(key(tp, batch), [...(runs.get(key(tp, batch)) ?? []), run]);
        }
      }
    }
  }
  const results: BenchGenerateResult[] = [];
  for (const tp of o.tp) {
    for (const batch of batches) {
      const all = runs.get(key(tp, batch))!;
      const run = medianRun(all);
      const r0 = run.stats.ranks[0]!;
      const base = tp !== 1 ? runs.get(key(1, batch)) : undefined;
      results.push({
        tp, batch, aggregate_tokens_per_s: run.aggregate,
        ...(rounds > 1 && { rounds_tokens_per_s: all.map((x) => x.aggregate) }),
        ...(base && { vs_tp1: median(all.map((x, i) => x.aggregate / base[i]!.aggregate)) }),
        prompt_tokens: run.promptTokens, tokens: run.tokens,
        ...(run.prefill !== undefined && { prefill_tokens_per_s: run.prefill }), decode_tokens_per_s: run.aggregate / batch,
        breakdown_ms: r0.breakdown, allreduce_roundtrip_ms: r0.allreduceRoundtripMs, load_ms: loadMs.get(tp)!, adapter: r0.adapter,
      });
    }
  }
  if (!o.profile) return results;
  for (const tp of o.tp) {
    const c = common(tp, true);
    await runGenerate(h, { ...c, maxTokens: 4 });
    for (const batch of batches) {
      // The profiled pass is short: it only needs enough steps for stable per-kernel means. A
      // batch needs its full length: its streams start a step apart, and the profile should
      // cover steps in which all of them decode (the measured window), not the ramp.
      const run = await measure(h, c, batch, batch === 1 ? Math.min(o.maxTokens, 8) : o.maxTokens);
      results.find((r) => r.tp === tp && r.batch === batch)!.profile = kernelProfile(config, tp, batch, run.stats);
    }
  }
  return results;
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
    const read = async (n: number): Promise<Uint8Array> => {
      const b = new Uint8Array(Math.min(n, size));
      return b.subarray(0, readSync(fd, b, 0, b.byteLength, 0));
    };
    const head = await read(MODEL_HEADER_BYTES);
    if (detectFormat(head) === 'gguf') return (await readGguf({ name: path, size: async () => size, head: read })).config;
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
  const q = c.nHeads * c.headSize;
  const kv = c.nKvHeads * c.headSize;
  const perLayer = (q + 2 * kv) * c.dim + c.dim * q + 3 * c.hiddenDim * c.dim;
  const flops = (2 * batch * (c.nLayers * perLayer + c.vocabSize * c.dim)) / tp;
  return {
    steps,
    kernels_ms_per_step,
    gpu_ms_per_step: gpu,
    ...(stats.ranks.length > 1 && { ranks_kernels_ms_per_step }),
    matmul_gflops: matmulMs > 0 ? flops / (matmulMs * 1e6) : 0,
  };
}
