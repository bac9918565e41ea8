/**
 * Where the ranks go: how many there are, which adapter each one asks for, and how the work is
 * split between them. `createEngine` resolves its `devices`, `tensorParallel` and `split`
 * options here, on the main thread, before any worker starts; each worker then asks for its
 * own adapter with its spec (adapters cannot cross threads).
 *
 * The options, and how they combine:
 * - `tensorParallel: N` alone: N ranks on the default adapter, split evenly (as before `devices`).
 * - `devices: N`: the same; with `tensorParallel` too, both must say N.
 * - `devices: [spec, ...]`: one rank per spec; `tensorParallel`, if a number, must equal the length.
 *   A `{cpu: true}` spec is a CPU rank: nothing is probed for it.
 * - `devices: "cpu"`: `tensorParallel` (or the split's length, or 1) CPU ranks.
 * - `devices: "auto"` (or `tensorParallel: "auto"`): ask for a high-performance and a low-power
 *   adapter and tell from `adapter.info` whether they differ. Several distinct adapters: one rank
 *   each, with the split set by measuring each one (rounded to whole heads). One adapter: TP=1,
 *   unless a buffer the model needs exceeds that adapter's limits, then the smallest degree that
 *   fits. With a number for `tensorParallel` (or a `split`), that many ranks are dealt round-robin
 *   over the distinct adapters, and nothing is measured.
 * - `split: [f0, f1, ...]`: per-rank shares (normalized); its length is the rank count, so it
 *   must agree with `tensorParallel` and `devices` when they give one.
 * Any disagreement is an `InvalidArgumentError` saying which two options disagree.
 */
import { InvalidArgumentError, PlanError, WebGpuUnavailableError } from '../errors.js';
import {
  adapterKey, adapterName, checkDeviceSpec, describeSpec, identityOf, isCpuSpec, requestAdapterFor, CPU_ADAPTER_NAME,
  type AdapterIdentity, type DeviceSpec,
} from '../gpu/core/adapter.js';
import type { ModelConfig } from '../model/config.js';
import { degreeError, makePlan } from '../parallel/plan.js';
import { proportionalSizes } from '../parallel/split.js';
import type { DevicePlacement } from './types.js';

export type DevicesOption = 'auto' | 'cpu' | number | readonly DeviceSpec[];

/** Whether every rank the options ask for is a CPU rank, so the engine needs no WebGPU. */
export function onlyCpuRanks(devices: DevicesOption | undefined): boolean {
  return devices === 'cpu' || (Array.isArray(devices) && devices.length > 0 && devices.every((d) => isCpuSpec(d as DeviceSpec)));
}

export interface PlacementOptions {
  devices?: DevicesOption;
  tensorParallel?: number | 'auto';
  split?: readonly number[];
}

/** The sizes a rank's unsplittable buffers depend on. */
export interface BufferSizes {
  contextLength: number;
  maxBatch: number;
  maxRows: number;
}

/** An adapter as the main thread saw it: what found it, who it is, its binding limit. */
export interface ProbedAdapter {
  spec: DeviceSpec | undefined;
  id: AdapterIdentity;
  /** min(maxStorageBufferBindingSize, maxBufferSize): the largest buffer a kernel may bind. */
  limit: number;
}

/** The decision: one spec per rank, the split, and the report `stats()` shows. */
export interface Placement {
  specs: (DeviceSpec | undefined)[];
  /** Adapter identity key per rank (kernel tuning is shared between ranks on one adapter). */
  keys: string[];
  /** Per-rank shares for an uneven plan; undefined for an even one. */
  fractions?: number[];
  report: Omit<DevicePlacement, 'ranks'>;
}

/** What the probe asks the browser for; tests pass a fake. */
export type AdapterProbe = (spec: DeviceSpec | undefined) => Promise<ProbedAdapter | null>;

/** Measures adapters (ms per calibration matmul, one each); tests pass a fake. */
export type Calibrate = (specs: (DeviceSpec | undefined)[]) => Promise<number[]>;

export function browserProbe(gpu: GPU): AdapterProbe {
  return async (spec) => {
    const a = await requestAdapterFor(gpu, spec);
    if (!a) return null;
    return { spec, id: identityOf(a), limit: Math.min(a.limits.maxStorageBufferBindingSize, a.limits.maxBufferSize) };
  };
}

function checkSplit(split: unknown): number[] | undefined {
  if (split === undefined) return undefined;
  if (!Array.isArray(split) || split.length < 1 || split.some((f) => typeof f !== 'number' || !(Number.isFinite(f) && f > 0))) {
    throw new InvalidArgumentError(`split must be a non-empty list of positive numbers, got ${JSON.stringify(split)}`);
  }
  return [...(split as number[])];
}

function agree(a: { what: string; n: number | undefined }, b: { what: string; n: number | undefined }): void {
  if (a.n !== undefined && b.n !== undefined && a.n !== b.n) {
    throw new InvalidArgumentError(`${a.what} says ${a.n} ranks but ${b.what} says ${b.n}`, 'Give the rank count once, or make them agree');
  }
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

function divisors(n: number): number[] {
  const out: number[] = [];
  for (let d = 1; d <= n; d++) if (n % d === 0) out.push(d);
  return out;
}

/**
 * Times within this ratio of each other count as equal: a short measurement on a busy machine
 * varies that much (two identical SwiftShader devices measured 1.0–1.9× apart here), and a split
 * that flips with noise would change the shard cache keys from load to load.
 */
export const CALIBRATION_NOISE = 1.25;

/**
 * Query heads per adapter from measured ms per matmul (lower is faster): shares in proportion
 * to speed, in whole heads; all equal when the times are within `CALIBRATION_NOISE`. An
 * adapter whose share rounds to no head is left out.
 */
export function headsFromTimes(ms: readonly number[], nHeads: number): number[] {
  const lo = Math.max(Math.min(...ms), 1e-6);
  if (Math.max(...ms) / lo < CALIBRATION_NOISE) return proportionalSizes(nHeads, ms.map(() => 1));
  return proportionalSizes(nHeads, ms.map((t) => 1 / Math.max(t, 1e-6)));
}

/** Resolves the placement options against the adapters `probe` finds. */
export async function placeRanks(
  opts: PlacementOptions, config: ModelConfig, sizes: BufferSizes, probe: AdapterProbe, calibrate: Calibrate,
): Promise<Placement> {
  const split = checkSplit(opts.split);
  const tp = opts.tensorParallel;
  if (tp !== undefined && tp !== 'auto' && !(Number.isInteger(tp) && tp >= 1)) {
    // A number that is no degree at all gets the plan's PlanError, which lists the valid ones.
    if (typeof tp === 'number') throw degreeError(config.nHeads, tp);
    throw new InvalidArgumentError(`tensorParallel must be a whole number ≥ 1 or "auto", got ${String(tp)}`);
  }
  const tpN = typeof tp === 'number' ? tp : undefined;
  const devices = opts.devices;
  const fromSplit = { what: 'split', n: split?.length };
  const fromTp = { what: 'tensorParallel', n: tpN };

  if (devices === 'auto' || (devices === undefined && tp === 'auto')) {
    agree(fromTp, fromSplit);
    return autoPlacement(config, sizes, probe, calibrate, tpN ?? split?.length, split);
  }

  let specs: (DeviceSpec | undefined)[];
  let mode: DevicePlacement['mode'];
  if (devices === 'cpu') {
    const n = tpN ?? split?.length ?? 1;
    agree(fromTp, fromSplit);
    specs = Array.from({ length: n }, () => ({ cpu: true }));
    mode = 'cpu';
  } else if (devices === undefined) {
    const n = tpN ?? split?.length ?? 1;
    agree(fromTp, fromSplit);
    specs = Array.from({ length: n }, () => undefined);
    mode = 'tensorParallel';
  } else if (typeof devices === 'number') {
    if (!(Number.isInteger(devices) && devices >= 1)) throw new InvalidArgumentError(`devices must be "auto", a whole number ≥ 1 or a list of specs, got ${devices}`);
    agree({ what: 'devices', n: devices }, fromTp);
    agree({ what: 'devices', n: devices }, fromSplit);
    specs = Array.from({ length: devices }, () => undefined);
    mode = 'count';
  } else if (Array.isArray(devices)) {
    if (devices.length < 1) throw new InvalidArgumentError('devices: expected at least one device spec, got an empty list');
    specs = devices.map((d, i) => checkDeviceSpec(d, `devices[${i}]`));
    agree({ what: `devices (${devices.length} specs)`, n: devices.length }, fromTp);
    agree({ what: `devices (${devices.length} specs)`, n: devices.length }, fromSplit);
    mode = 'list';
  } else {
    throw new InvalidArgumentError(`devices must be "auto", "cpu", a whole number ≥ 1 or a list of specs, got ${JSON.stringify(devices)}`);
  }

  // Resolve each distinct GPU spec once here too: a filter that matches nothing fails before any
  // worker starts, and the report can name the adapters. A CPU rank needs no adapter.
  const found = new Map<string, ProbedAdapter>();
  for (const s of specs) {
    const label = describeSpec(s);
    if (isCpuSpec(s) || found.has(label)) continue;
    const a = await probe(s);
    if (!a) throw new WebGpuUnavailableError(`navigator.gpu gave no adapter for ${label}`);
    found.set(label, a);
  }
  const keys = specs.map((s) => (isCpuSpec(s) ? 'cpu' : adapterKey(found.get(describeSpec(s))!.id)));
  const names = distinctNames([...found.values()]);
  if (specs.some(isCpuSpec)) names.push(CPU_ADAPTER_NAME);
  const n = specs.length;
  const reason =
    mode === 'list'
      ? `${n} rank${n === 1 ? '' : 's'}, one per device spec (${specs.map(describeSpec).join(', ')}), on ${names.join(' + ')}`
      : mode === 'cpu'
        ? `${n} CPU rank${n === 1 ? '' : 's'} (WebAssembly SIMD), as devices says`
        : `${n} rank${n === 1 ? '' : 's'} on the default adapter (${names[0]}), as ${mode === 'count' ? 'devices' : 'tensorParallel'} says`;
  return {
    specs,
    keys,
    fractions: split,
    report: { mode, reason, adapters: names, split: split ? 'explicit' : 'even', fractions: [] },
  };
}

function distinctNames(as: ProbedAdapter[]): string[] {
  const seen = new Map<string, string>();
  for (const a of as) if (!seen.has(adapterKey(a.id))) seen.set(adapterKey(a.id), adapterName(a.id));
  return [...seen.values()];
}

async function autoPlacement(
  config: ModelConfig, sizes: BufferSizes, probe: AdapterProbe, calibrate: Calibrate, fixed: number | undefined, split: number[] | undefined,
): Promise<Placement> {
  const asked: DeviceSpec[] = [{ powerPreference: 'high-performance' }, { powerPreference: 'low-power' }];
  const distinct: ProbedAdapter[] = [];
  for (const spec of asked) {
    const a = await probe(spec);
    if (a && !distinct.some((d) => adapterKey(d.id) === adapterKey(a.id))) distinct.push(a);
  }
  if (distinct.length === 0) throw new WebGpuUnavailableError('navigator.gpu gave no adapter');
  const names = distinct.map((d) => adapterName(d.id));
  const sameNote = distinct.length === 1 ? 'high-performance and low-power are the same adapter' : `${distinct.length} distinct adapters`;

  if (fixed !== undefined) {
    // The count is given: deal the ranks round-robin over the adapters found.
    const at = Array.from({ length: fixed }, (_, r) => distinct[r % distinct.length]!);
    return {
      specs: at.map((a) => a.spec),
      keys: at.map((a) => adapterKey(a.id)),
      fractions: split,
      report: {
        mode: 'auto', adapters: names, split: split ? 'explicit' : 'even', fractions: [],
        reason: `${sameNote}; ${fixed} rank${fixed === 1 ? '' : 's'} (as ${split ? 'split' : 'tensorParallel'} says) dealt round-robin over ${names.join(' + ')}`,
      },
    };
  }

  if (distinct.length === 1) {
    const a = distinct[0]!;
    const limit = a.limit;
    const one = largestBuffer(config, 1, sizes);
    if (one.bytes <= limit) {
      return {
        specs: [a.spec],
        keys: [adapterKey(a.id)],
        report: {
          mode: 'auto', adapters: names, split: 'even', fractions: [],
          reason: `${sameNote} (${names[0]}): TP=1, since ranks sharing one adapter only add round trips`,
        },
      };
    }
    const fits = divisors(config.nHeads).find((t) => t > 1 && largestBuffer(config, t, sizes).bytes <= limit);
    if (fits === undefined) {
      throw new PlanError(
        `${one.what} needs ${one.bytes} bytes, over the adapter's limit of ${limit}, at every degree up to ${config.nHeads}`,
        'Lower maxContext or maxBatch',
      );
    }
    return {
      specs: Array.from({ length: fits }, () => a.spec),
      keys: Array.from({ length: fits }, () => adapterKey(a.id)),
      report: {
        mode: 'auto', adapters: names, split: 'even', fractions: [],
        reason: `${sameNote} (${names[0]}), but at TP=1 ${one.what} needs ${one.bytes} bytes, over its limit of ${limit}: TP=${fits}, the smallest degree that fits`,
      },
    };
  }

  // Several adapters: one rank each, the work split by measured speed in whole heads.
  const ms = await calibrate(distinct.map((a) => a.spec));
  const heads = headsFromTimes(ms, config.nHeads);
  const kept = distinct.map((a, i) => ({ a, heads: heads[i]!, ms: ms[i]! })).filter((x) => x.heads > 0);
  const dropped = distinct.length - kept.length;
  const fractions = kept.map((x) => x.heads / config.nHeads);
  return {
    specs: kept.map((x) => x.a.spec),
    keys: kept.map((x) => adapterKey(x.a.id)),
    fractions: kept.length > 1 ? fractions : undefined,
    report: {
      mode: 'auto', adapters: names, split: kept.length > 1 ? 'calibrated' : 'even', fractions: [],
      calibrationMs: ms,
      reason:
        `${sameNote} (${names.join(' + ')}): one rank each, query heads ${kept.map((x) => x.heads).join('/')} by measured speed` +
        (dropped ? `; ${dropped} adapter${dropped === 1 ? '' : 's'} too slow for a whole head left out` : ''),
    },
  };
}
