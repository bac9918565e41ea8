/**
 * `devices: "auto"`, the default: which kind of rank, how many, and how the work is split,
 * decided from what the page has and by measurement.
 * - A real GPU adapter (not the browser's fallback, not a software renderer) gets GPU ranks:
 *   one per distinct adapter, split by a short matmul measurement, or the smallest degree whose
 *   buffers fit one adapter's limits. Where cores are left over, GPU + CPU ranks (split by the
 *   same measurement, a CPU rank's gemv beside the GPU's) is a second candidate, and CPU ranks
 *   join only if its timed steps beat the GPU's alone.
 * - A fallback adapter, or no WebGPU at all, gets CPU ranks: from the smallest degree that fits
 *   4 GiB per rank up to one per core, each degree timed for a few decode steps, the fastest
 *   kept. A degree whose even split would cut a super-block of wo (a 768-wide K-quant at TP 2)
 *   takes the heads in whole blocks with the MLP and vocab even (`degreeSplit`).
 * - A request CPU ranks cannot run yet (quantised weights in groups other than GGUF's 32,
 *   runq.c's exact arithmetic) gets GPU ranks, and the reason says why. GGUF Q8_0 and Q4_0, weight-only
 *   or with int8 activations, are placed as f32 is.
 * A count (`tensorParallel: N`, or a `split`) fixes the degree: nothing is timed, the kind is
 * chosen as above.
 */
import { PlanError, RankMemoryError, WebGpuUnavailableError } from '../errors.js';
import { adapterKey, adapterName, backendOf, isSoftwareAdapter, CPU_ADAPTER_NAME, type DeviceSpec } from '../gpu/core/adapter.js';
import type { ModelConfig } from '../model/config.js';
import { degreeSplit, evenDegrees, makePlan, splitUnits, type PlanOptions } from '../parallel/plan.js';
import { proportionalSizes } from '../parallel/split.js';
import { cpuFitsAt, cpuRankBytes, rankShapes, WASM_MEMORY_BYTES } from './cpu-memory.js';
import type {
  AdapterProbe, BufferSizes, Calibrate, ExplicitSplit, Placement, PlacementDecision, PlacementEnv, ProbedAdapter, TimedChoice,
} from './placement-types.js';
import type { PlacementTiming } from './types.js';

/**
 * Times within this ratio of each other count as equal: a short measurement on a busy machine
 * varies that much (two identical SwiftShader devices measured 1.0–1.9× apart here), and a split
 * that flips with noise would change the shard cache keys from load to load.
 */
export const CALIBRATION_NOISE = 1.25;

/** A timed candidate after the first must be this much faster to win: more ranks for noise is a loss. */
export const TIMING_MARGIN = 1.1;

/**
 * Query heads per device from measured ms per matmul (lower is faster): shares in proportion
 * to speed, in whole heads (in multiples of `unit` heads, so no split cuts a quantisation
 * group or super-block); all equal when the times are within `CALIBRATION_NOISE`. A device
 * whose share rounds to no head is left out.
 */
export function headsFromTimes(ms: readonly number[], nHeads: number, unit = 1): number[] {
  const lo = Math.max(Math.min(...ms), 1e-6);
  const weights = Math.max(...ms) / lo < CALIBRATION_NOISE ? ms.map(() => 1) : ms.map((t) => 1 / Math.max(t, 1e-6));
  const units = Math.ceil(nHeads / unit);
  const heads = proportionalSizes(units, weights).map((h) => h * unit);
  // The last unit may be short: it belongs to the last device with a share.
  let last = heads.length - 1;
  while (heads[last] === 0) last--;
  heads[last]! -= units * unit - nHeads;
  return heads;
}

/**
 * The largest single buffer one rank of a `world`-rank even split binds, and what it is. Weight
 * matrices are split into binding-sized chunks, so they never limit; the KV cache of one
 * layer and the activation rows do.
 */
export function largestBuffer(config: ModelConfig, world: number, s: BufferSizes): { bytes: number; what: string } {
  const plan = makePlan(config, { tensorParallel: world });
  let best = { bytes: 0, what: '' };
  const logitRows = Math.min(s.maxBatch, s.maxRows);
  for (const r of plan.ranks) {
    const heads = r.heads[1] - r.heads[0];
    const kv = r.kvHeads[1] - r.kvHeads[0];
    const hidden = r.hidden[1] - r.hidden[0];
    const vocab = r.vocab[1] - r.vocab[0];
    const candidates = [
      { bytes: s.maxBatch * kv * s.contextLength * config.headSize * 4, what: 'the KV cache of one layer' },
      { bytes: s.maxRows * 2 * hidden * 4, what: 'the MLP activations' },
      { bytes: s.maxRows * (heads + 2 * kv) * config.headSize * 4, what: 'the q/k/v activations' },
      { bytes: logitRows * vocab * 4, what: 'the logits' },
    ];
    for (const c of candidates) if (c.bytes > best.bytes) best = c;
  }
  return best;
}

/**
 * The index of the candidate to keep, from the ms per step timed so far (in candidate order):
 * the first, unless a later one is faster than the best so far by `TIMING_MARGIN`.
 */
export function chooseTimed(ms: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < ms.length; i++) if (ms[i]! * TIMING_MARGIN < ms[best]!) best = i;
  return best;
}

/** The candidate chosen from its timings, its reason and report saying how. */
export function timedPlacement(t: TimedChoice, msPerStep: readonly number[], steps: number, totalMs: number): Placement {
  const chosen = chooseTimed(msPerStep);
  const p = t.candidates[chosen]!;
  const timing: PlacementTiming = {
    steps, totalMs, chosen,
    candidates: t.candidates.map((c, i) => ({ label: t.labels[i]!, backends: c.specs.map(backendOf), msPerStep: msPerStep[i]! })),
  };
  const times = timing.candidates.map((c) => `${c.label} ${c.msPerStep.toFixed(2)} ms`).join(', ');
  return {
    ...p,
    report: {
      ...p.report, timing,
      reason: `${t.why}; ${steps} decode steps timed on each (${times} per step; ${(totalMs / 1000).toFixed(1)} s with the loads): ${t.labels[chosen]}`,
    },
  };
}

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
const cpuSpecs = (n: number): DeviceSpec[] => Array.from({ length: n }, () => ({ cpu: true }));

/** `n` CPU ranks, evenly split, or as `split` says (`chosen`: a split auto chose, not the caller). */
function onCpu(n: number, reason: string, split?: ExplicitSplit, chosen = false): Placement {
  return {
    specs: cpuSpecs(n), keys: cpuSpecs(n).map(() => 'cpu'), ...split,
    report: { mode: 'auto', reason, adapters: [CPU_ADAPTER_NAME], split: split ? (chosen ? 'blocks' : 'explicit') : 'even', fractions: [] },
  };
}

/** A per-axis split's reason: which heads each rank holds and why. */
const blockNote = (heads: readonly number[]) => `query heads ${heads.join('/')} in whole super-blocks of wo, the MLP and vocab even`;

async function distinctAdapters(probe: AdapterProbe): Promise<ProbedAdapter[]> {
  const asked: DeviceSpec[] = [{ powerPreference: 'high-performance' }, { powerPreference: 'low-power' }];
  const distinct: ProbedAdapter[] = [];
  for (const spec of asked) {
    const a = await probe(spec);
    if (a && !distinct.some((d) => adapterKey(d.id) === adapterKey(a.id))) distinct.push(a);
  }
  return distinct;
}

/** Resolves `devices: "auto"`; `fixed` is a rank count given by `tensorParallel` or `split`. */
export async function autoPlacement(
  config: ModelConfig, sizes: BufferSizes, probe: AdapterProbe, calibrate: Calibrate,
  fixed: number | undefined, split: ExplicitSplit | undefined, env: PlacementEnv,
): Promise<PlacementDecision> {
  const found = env.hasGpu ? await distinctAdapters(probe) : [];
  const real = found.filter((a) => !isSoftwareAdapter(a.id));
  const names = found.map((a) => adapterName(a.id));
  if (real.length === 0) {
    const seen = found.length === 0
      ? env.hasGpu ? 'navigator.gpu gave no adapter' : 'no WebGPU (navigator.gpu is missing)'
      : `no GPU: the WebGPU adapter, ${names.join(' + ')}, computes on the CPU`;
    if (!env.cpuBlocker) return cpuAuto(config, sizes, fixed, split, env, seen);
    if (found.length === 0) {
      throw new WebGpuUnavailableError(
        `${seen}, and this model needs WebGPU ranks: CPU ranks do not run ${env.cpuBlocker} yet`,
        'Use a browser with WebGPU enabled (Chrome/Edge 113+, or Chromium with --enable-unsafe-webgpu), or an f32 or f16 model on CPU ranks',
      );
    }
    return gpuAuto(config, sizes, calibrate, found, fixed, split, `${seen}, but CPU ranks do not run ${env.cpuBlocker} yet: GPU ranks`, env);
  }
  const gpu = await gpuAuto(config, sizes, calibrate, real, fixed, split, `a GPU (${real.map((a) => adapterName(a.id)).join(' + ')})`, env);
  const spare = env.cores - gpu.specs.length;
  const note = (why: string): Placement => ({ ...gpu, report: { ...gpu.report, reason: `${gpu.report.reason}; ${why}` } });
  if (env.cpuBlocker) return note(`no CPU ranks, which do not run ${env.cpuBlocker} yet`);
  if (fixed !== undefined) return note(`the rank count is given, so no CPU rank joins`);
  if (spare < 1) return note(`no core is left for a CPU rank (${plural(env.cores, 'core')})`);
  if (new Set(gpu.keys).size !== gpu.keys.length) return note('its ranks share an adapter, so no CPU rank joins');
  return mixedCandidate(config, calibrate, gpu, spare, env);
}

/** GPU ranks alone, and GPU + `spare` CPU ranks split by measured speed, to be timed against each other. */
async function mixedCandidate(config: ModelConfig, calibrate: Calibrate, gpu: Placement, spare: number, env: PlacementEnv): Promise<PlacementDecision> {
  const gpuSpecs = gpu.specs;
  const ms = await calibrate([...gpuSpecs, { cpu: true }]);
  const cpuMs = ms[ms.length - 1]!;
  const all = [...ms.slice(0, -1), ...Array.from({ length: spare }, () => cpuMs)];
  const unit = splitUnits(config, env.tensors).heads;
  const heads = headsFromTimes(all, config.nHeads, unit);
  // A GPU rank keeps at least one head (unit): the timed steps, not the gemv, say whether it should run alone.
  for (let g = 0; g < gpuSpecs.length; g++) {
    if (heads[g]! > 0) continue;
    const from = heads.indexOf(Math.max(...heads));
    heads[from]! -= unit;
    heads[g] = unit;
  }
  const gpuHeads = heads.slice(0, gpuSpecs.length);
  const cpuHeads = heads.slice(gpuSpecs.length).filter((h) => h > 0);
  const joined = cpuHeads.length;
  if (joined === 0) {
    return { ...gpu, report: { ...gpu.report, reason: `${gpu.report.reason}; a CPU rank (${cpuMs.toFixed(2)} ms per calibration gemv) is too slow for a whole head, so none joins` } };
  }
  const kept = [...gpuHeads, ...cpuHeads];
  const total = kept.reduce((a, b) => a + b, 0);
  const specs = [...gpuSpecs, ...cpuSpecs(joined)];
  // Shares of the heads the kept devices hold; the plan renormalises them.
  const fractions = kept.map((h) => h / total);
  const mixed: Placement = {
    specs, keys: [...gpu.keys, ...cpuSpecs(joined).map(() => 'cpu')], fractions,
    report: {
      mode: 'auto', adapters: [...gpu.report.adapters, CPU_ADAPTER_NAME], split: 'calibrated', fractions: [], calibrationMs: ms,
      reason: `${gpu.report.reason}; with ${plural(joined, 'spare core')}: GPU + ${plural(joined, 'CPU rank')}, query heads ${kept.join('/')} by measured speed`,
    },
  };
  return {
    candidates: [gpu, mixed],
    labels: [gpuSpecs.length === 1 ? 'GPU alone' : `${gpuSpecs.length} GPU ranks alone`, `GPU + ${plural(joined, 'CPU rank')}`],
    why: `a GPU (${gpu.report.adapters.join(' + ')}) and ${plural(env.cores - gpuSpecs.length, 'spare core')}: CPU ranks join only if that makes a step faster`,
  };
}

/**
 * CPU ranks: the smallest degree that fits up to one per core, timed when there is a choice. A
 * degree whose even split would cut a super-block of wo takes `degreeSplit`'s per-axis one.
 */
export function cpuAuto(config: ModelConfig, sizes: BufferSizes, fixed: number | undefined, split: ExplicitSplit | undefined, env: PlacementEnv, seen: string): PlacementDecision {
  const s = { ...sizes, kvBytes: env.kvBytes };
  const place = ({ d, opts }: { d: number; opts: PlanOptions }, reason: string): Placement => {
    const heads = opts.axes?.heads;
    return heads ? onCpu(d, `${reason}; at ${plural(d, 'rank')}, ${blockNote(heads)}`, { axes: { heads } }, true) : onCpu(d, reason);
  };
  if (fixed !== undefined) {
    const reason = `${seen}: ${plural(fixed, 'CPU rank')} (WebAssembly SIMD), as ${split ? 'split' : 'tensorParallel'} says`;
    const opts = split ? undefined : degreeSplit(config, fixed, env.tensors);
    return opts?.axes ? place({ d: fixed, opts }, reason) : onCpu(fixed, reason, split);
  }
  // Only splits the plan accepts (a K-quant file's super-blocks rule some out) are ever offered.
  const accepted: { d: number; opts: PlanOptions }[] = [];
  for (let d = 1; d <= config.nHeads; d++) {
    const opts = degreeSplit(config, d, env.tensors);
    if (opts) accepted.push({ d, opts });
  }
  const fitsAt = (a: (typeof accepted)[number]) => cpuFitsAt(config, env.tensors, a.opts, s);
  const fit = accepted.find(fitsAt)?.d;
  if (fit === undefined) {
    const last = accepted[accepted.length - 1]!;
    const r = cpuRankBytes(config, rankShapes(config, env.tensors, last.opts)[0]!, s);
    throw new RankMemoryError(last.d, r.total, WASM_MEMORY_BYTES, `even at the finest split, of its ${config.nHeads} heads`, undefined);
  }
  const degrees = accepted.filter((a) => a.d === fit || (a.d > fit && a.d <= env.cores && fitsAt(a)));
  const fitNote = fit > 1 ? `; a CPU rank holds at most 4 GiB, so at least ${plural(fit, 'rank')}` : '';
  const why = `${seen}: CPU ranks (WebAssembly SIMD), up to one per core (${plural(env.cores, 'core')})${fitNote}`;
  if (degrees.length === 1) return place(degrees[0]!, `${why}: ${plural(degrees[0]!.d, 'CPU rank')}`);
  const label = (a: (typeof accepted)[number]) => `${plural(a.d, 'CPU rank')}${a.opts.axes?.heads ? ` (heads ${a.opts.axes.heads.join('/')})` : ''}`;
  return { candidates: degrees.map((a) => place(a, why)), labels: degrees.map(label), why };
}

/** GPU ranks over `adapters` (today's auto: one rank per distinct adapter, or the smallest degree that fits one). */
async function gpuAuto(
  config: ModelConfig, sizes: BufferSizes, calibrate: Calibrate, distinct: ProbedAdapter[], fixed: number | undefined, split: ExplicitSplit | undefined, seen: string,
  env: PlacementEnv,
): Promise<Placement> {
  const names = distinct.map((d) => adapterName(d.id));
  const sameNote = distinct.length === 1 ? 'high-performance and low-power are the same adapter' : `${distinct.length} distinct adapters`;
  const placed = (at: ProbedAdapter[], reason: string, extra: Partial<Placement['report']> = {}, chosen?: ExplicitSplit): Placement => ({
    specs: at.map((a) => a.spec),
    keys: at.map((a) => adapterKey(a.id)),
    ...chosen,
    report: { mode: 'auto', adapters: names, split: chosen ? (split ? 'explicit' : 'calibrated') : 'even', fractions: [], ...extra, reason: `${seen}; ${reason}` },
  });

  if (fixed !== undefined) {
    // The count is given: deal the ranks round-robin over the adapters found.
    const at = Array.from({ length: fixed }, (_, r) => distinct[r % distinct.length]!);
    return placed(at, `${sameNote}; ${plural(fixed, 'rank')} (as ${split ? 'split' : 'tensorParallel'} says) dealt round-robin over ${names.join(' + ')}`, {}, split);
  }

  if (distinct.length === 1) {
    const a = distinct[0]!;
    const one = largestBuffer(config, 1, sizes);
    if (one.bytes <= a.limit) return placed([a], `${sameNote} (${names[0]}): TP=1, since ranks sharing one adapter only add round trips`);
    const fits = evenDegrees(config, env.tensors).find((t) => t > 1 && largestBuffer(config, t, sizes).bytes <= a.limit);
    if (fits === undefined) {
      throw new PlanError(`${one.what} needs ${one.bytes} bytes, over the adapter's limit of ${a.limit}, at every degree up to ${config.nHeads}`, 'Lower maxContext or maxBatch');
    }
    return placed(
      Array.from({ length: fits }, () => a),
      `${sameNote} (${names[0]}), but at TP=1 ${one.what} needs ${one.bytes} bytes, over its limit of ${a.limit}: TP=${fits}, the smallest degree that fits`,
    );
  }

  // Several adapters: one rank each, the work split by measured speed in whole heads.
  const ms = await calibrate(distinct.map((a) => a.spec));
  const heads = headsFromTimes(ms, config.nHeads, splitUnits(config, env.tensors).heads);
  const kept = distinct.map((a, i) => ({ a, heads: heads[i]! })).filter((x) => x.heads > 0);
  const dropped = distinct.length - kept.length;
  return placed(
    kept.map((x) => x.a),
    `${sameNote} (${names.join(' + ')}): one rank each, query heads ${kept.map((x) => x.heads).join('/')} by measured speed` +
      (dropped ? `; ${plural(dropped, 'adapter')} too slow for a whole head left out` : ''),
    { calibrationMs: ms, split: kept.length > 1 ? 'calibrated' : 'even' },
    kept.length > 1 ? { fractions: kept.map((x) => x.heads / config.nHeads) } : undefined,
  );
}
