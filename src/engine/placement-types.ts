/** The types placement.ts and auto-placement.ts share: what they are given and what they decide. */
import type { AdapterIdentity, DeviceSpec } from '../gpu/core/adapter.js';
import type { TensorInfo } from '../model/config.js';
import type { AxisSplit } from '../parallel/plan.js';
import type { DevicePlacement } from './types.js';

/**
 * Where the ranks go: `'auto'` (the default) decides by measurement, `'gpu'` puts every rank on
 * the default WebGPU adapter, `'cpu'` makes every rank a CPU rank (with `tensorParallel: 'auto'`,
 * as many as timing says, up to one per core), a number is that many ranks on the default
 * adapter, and a list gives one spec per rank.
 */
export type DevicesOption = 'auto' | 'gpu' | 'cpu' | number | readonly DeviceSpec[];

export interface PlacementOptions {
  devices?: DevicesOption;
  tensorParallel?: number | 'auto';
  /** Per-rank shares for every axis (a list), or per axis (`{heads: [8, 4]}`, the others even). */
  split?: readonly number[] | AxisSplit;
}

/** An explicit split as the plan takes it: shares for every axis, and per-axis ones. */
export interface ExplicitSplit {
  /** Per-rank shares of every axis for an uneven plan; undefined for an even one. */
  fractions?: number[];
  /** Per-axis shares, in place of `fractions` (or of the even split) on those axes. */
  axes?: AxisSplit;
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

/** The decision: one spec per rank, the split (none: even), and the report `stats()` shows (its activations follow from the ranks). */
export interface Placement extends ExplicitSplit {
  specs: (DeviceSpec | undefined)[];
  /** Adapter identity key per rank (kernel tuning is shared between ranks on one adapter). */
  keys: string[];
  report: Omit<DevicePlacement, 'ranks' | 'activations' | 'activationsReason'>;
}

/**
 * Placements `"auto"` can tell apart only by running them: each is loaded and timed for a few
 * decode steps, and `chooseTimed` picks one. The first is the baseline (fewest ranks, or GPU
 * ranks alone), which a later one must beat by `TIMING_MARGIN`.
 */
export interface TimedChoice {
  candidates: Placement[];
  /** A short label per candidate: `2 CPU ranks`, `GPU alone`, `GPU + 1 CPU rank`. */
  labels: string[];
  /** What led to these candidates: the start of the chosen one's reason. */
  why: string;
}

/** What `placeRanks` decides: one placement, or candidates to time. */
export type PlacementDecision = Placement | TimedChoice;

/** What the probe asks the browser for; tests pass a fake. */
export type AdapterProbe = (spec: DeviceSpec | undefined) => Promise<ProbedAdapter | null>;

/** Measures devices (ms per calibration matmul, one each; `{cpu: true}` is a CPU rank's core); tests pass a fake. */
export type Calibrate = (specs: (DeviceSpec | undefined)[]) => Promise<number[]>;

/** What `"auto"` knows about the page and the request besides the adapters. */
export interface PlacementEnv {
  /** Whether `navigator.gpu` exists. */
  hasGpu: boolean;
  /** Logical cores (`navigator.hardwareConcurrency`): at most one CPU rank each. */
  cores: number;
  /** What of the request CPU ranks cannot run yet (e.g. `quantised weights (q8_0)`), if anything. */
  cpuBlocker?: string;
  /** The model's tensor table, for the shard sizes (default: llama2.c's layout of the config). */
  tensors?: readonly TensorInfo[];
  /** Bytes per KV-cache value on a CPU rank (4: f32, 2: f16). */
  kvBytes: number;
}
