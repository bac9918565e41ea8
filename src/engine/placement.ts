/**
 * Where the ranks go: how many there are, which device each one runs on, and how the work is
 * split between them. `createEngine` resolves its `devices`, `tensorParallel` and `split`
 * options here, on the main thread, before any worker starts; each worker then asks for its
 * own adapter with its spec (adapters cannot cross threads), or computes on its core.
 *
 * The options, and how they combine:
 * - `devices: "auto"` (the default; also `tensorParallel: "auto"`): decided by measurement, see
 *   auto-placement.ts. A `tensorParallel` number or a `split` fixes the rank count.
 * - `devices: "gpu"`: `tensorParallel` (or the split's length, or 1) ranks on the default adapter.
 * - `devices: N`: the same; with `tensorParallel` too, both must say N.
 * - `devices: "cpu"`: `tensorParallel` (or the split's length, or 1) CPU ranks; with
 *   `tensorParallel: "auto"`, the degrees that fit up to one per core, timed as under `"auto"`.
 * - `devices: [spec, ...]`: one rank per spec; `tensorParallel`, if a number, must equal the length.
 *   A `{cpu: true}` spec is a CPU rank: nothing is probed for it.
 * - `split: [f0, f1, ...]`: per-rank shares (normalized) of every axis; its length is the rank
 *   count, so it must agree with `tensorParallel` and `devices` when they give one.
 *   `split: {heads: [...], hidden: [...], vocab: [...]}` gives shares per axis (each one per
 *   rank, all of one length); an axis left out is split evenly.
 * Any disagreement is an `InvalidArgumentError` saying which two options disagree; a GPU rank
 * without `navigator.gpu` is a `WebGpuUnavailableError` naming CPU ranks as the remedy.
 */
import { InvalidArgumentError, ModelFormatError, WebGpuUnavailableError } from '../errors.js';
import {
  adapterKey, adapterName, checkDeviceSpec, describeSpec, identityOf, isCpuSpec, requestAdapterFor, CPU_ADAPTER_NAME, type DeviceSpec,
} from '../gpu/core/adapter.js';
import type { ModelConfig } from '../model/config.js';
import { AXIS_NAMES as AXES, worldOf, type SharesCheck } from '../parallel/axis-split.js';
import { degreeError, type AxisSplit } from '../parallel/plan.js';
import { autoPlacement, cpuAuto } from './auto-placement.js';
import type {
  AdapterProbe, BufferSizes, Calibrate, ExplicitSplit, PlacementDecision, PlacementEnv, PlacementOptions, ProbedAdapter,
} from './placement-types.js';
import type { DevicePlacement } from './types.js';

export type {
  AdapterProbe, BufferSizes, Calibrate, DevicesOption, ExplicitSplit, Placement, PlacementDecision, PlacementEnv, PlacementOptions, ProbedAdapter, TimedChoice,
} from './placement-types.js';
export { CALIBRATION_NOISE, chooseTimed, headsFromTimes, largestBuffer, timedPlacement, TIMING_MARGIN } from './auto-placement.js';

/** A page with WebGPU, one core, f32 KV: what the placement tests assume unless they say otherwise. */
const DEFAULT_ENV: PlacementEnv = { hasGpu: true, cores: 1, kvBytes: 4 };

export function browserProbe(gpu: GPU): AdapterProbe {
  return async (spec) => {
    const a = await requestAdapterFor(gpu, spec);
    if (!a) return null;
    return { spec, id: identityOf(a), limit: Math.min(a.limits.maxStorageBufferBindingSize, a.limits.maxBufferSize) };
  };
}

/** The `split` option's errors: InvalidArgumentErrors that name it. */
const SPLIT_CHECK: SharesCheck = { fractions: 'split', axes: 'split', Err: InvalidArgumentError };

/** The `split` option as the plan takes it, and the rank count it gives. */
function checkSplit(split: unknown): (ExplicitSplit & { n: number }) | undefined {
  if (split === undefined) return undefined;
  const remedy = `Give split as a list of per-rank shares, or as an object of them per axis (${AXES.join(', ')}), e.g. {heads: [2, 1]}`;
  const list = Array.isArray(split);
  if (!list && (typeof split !== 'object' || split === null)) throw new InvalidArgumentError(`split must be a list or an object of lists, got ${JSON.stringify(split)}`, remedy);
  const { world, lists } = worldOf(list ? { fractions: split as number[] } : { axes: split as AxisSplit }, SPLIT_CHECK);
  if (world === undefined) throw new InvalidArgumentError('split names no axis', remedy);
  return list ? { fractions: [...(split as number[])], n: world } : { axes: lists, n: world };
}

const explicit = (s: ExplicitSplit | undefined): ExplicitSplit => (s ? { ...(s.fractions && { fractions: s.fractions }), ...(s.axes && { axes: s.axes }) } : {});

function agree(a: { what: string; n: number | undefined }, b: { what: string; n: number | undefined }): void {
  if (a.n !== undefined && b.n !== undefined && a.n !== b.n) {
    throw new InvalidArgumentError(`${a.what} says ${a.n} ranks but ${b.what} says ${b.n}`, 'Give the rank count once, or make them agree');
  }
}

/**
 * Resolves the placement options against the adapters `probe` finds: one placement, or (under
 * `"auto"`) candidates to time, which `timedPlacement` decides between.
 */
export async function placeRanks(
  opts: PlacementOptions, config: ModelConfig, sizes: BufferSizes, probe: AdapterProbe, calibrate: Calibrate, env: PlacementEnv = DEFAULT_ENV,
): Promise<PlacementDecision> {
  const split = checkSplit(opts.split);
  const tp = opts.tensorParallel;
  if (tp !== undefined && tp !== 'auto' && !(Number.isInteger(tp) && tp >= 1)) {
    // A number that is no degree at all gets the plan's PlanError, which lists the valid ones.
    if (typeof tp === 'number') throw degreeError(config, tp, env.tensors);
    throw new InvalidArgumentError(`tensorParallel must be a whole number ≥ 1 or "auto", got ${String(tp)}`);
  }
  const tpN = typeof tp === 'number' ? tp : undefined;
  const devices = opts.devices;
  const fromSplit = { what: 'split', n: split?.n };
  const fromTp = { what: 'tensorParallel', n: tpN };

  if (devices === 'auto' || devices === undefined) {
    agree(fromTp, fromSplit);
    return autoPlacement(config, sizes, probe, calibrate, tpN ?? split?.n, split && explicit(split), env);
  }

  let specs: (DeviceSpec | undefined)[];
  let mode: DevicePlacement['mode'];
  if (devices === 'cpu') {
    if (tp === 'auto' && !split) {
      if (env.cpuBlocker) throw new ModelFormatError(`devices "cpu": CPU ranks do not run ${env.cpuBlocker} yet`, 'Use devices "auto" or "gpu"');
      return cpuAuto(config, sizes, undefined, undefined, env, 'devices: "cpu"');
    }
    const n = tpN ?? split?.n ?? 1;
    agree(fromTp, fromSplit);
    specs = Array.from({ length: n }, () => ({ cpu: true }));
    mode = 'cpu';
  } else if (devices === 'gpu') {
    const n = tpN ?? split?.n ?? 1;
    agree(fromTp, fromSplit);
    specs = Array.from({ length: n }, () => undefined);
    mode = 'gpu';
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
    throw new InvalidArgumentError(`devices must be "auto", "gpu", "cpu", a whole number ≥ 1 or a list of specs, got ${JSON.stringify(devices)}`);
  }
  if (!env.hasGpu && !specs.every(isCpuSpec)) {
    const asked = mode === 'gpu' ? 'devices: "gpu"' : mode === 'list' ? 'a GPU spec in devices' : 'devices as a count of GPU ranks';
    throw new WebGpuUnavailableError(`navigator.gpu is missing, and ${asked} asks for WebGPU ranks`);
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
        : `${n} rank${n === 1 ? '' : 's'} on the default adapter (${names[0]}), as devices: ${mode === 'count' ? n : '"gpu"'} says`;
  return {
    specs,
    keys,
    ...explicit(split),
    report: { mode, reason, adapters: names, split: split ? 'explicit' : 'even', fractions: [] },
  };
}

function distinctNames(as: ProbedAdapter[]): string[] {
  const seen = new Map<string, string>();
  for (const a of as) if (!seen.has(adapterKey(a.id))) seen.set(adapterKey(a.id), adapterName(a.id));
  return [...seen.values()];
}
