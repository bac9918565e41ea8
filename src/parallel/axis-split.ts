/**
 * How many query heads, MLP hidden units and vocabulary rows each rank gets: the split per axis.
 * `fractions` is one share per rank for every axis; `axes` overrides it axis by axis, and an axis
 * that neither names is split evenly. KV heads follow the query heads (plan.ts). Pure sizes and
 * their validation, in the units a split must keep whole (`SplitUnits`, from the tensor table).
 */
import { PlanError, type WebGpuTpError } from '../errors.js';
import type { ModelConfig } from '../model/config.js';
import { evenSizes, proportionalSizes } from './split.js';

/** The axes a split can set on its own. */
export type AxisName = 'heads' | 'hidden' | 'vocab';
export const AXIS_NAMES: readonly AxisName[] = ['heads', 'hidden', 'vocab'];

/** Per-rank shares (any positive numbers, normalized) for some axes; the others split evenly. */
export type AxisSplit = { readonly [A in AxisName]?: readonly number[] };

export interface SplitOptions {
  /** Number of ranks; with no shares for the heads, it must divide n_heads. */
  tensorParallel?: number;
  /**
   * Per-rank shares of every axis, for unequal devices. Query heads are given out whole in
   * proportion, MLP units in blocks of `hiddenBlock`, vocab rows follow the fractions.
   */
  fractions?: readonly number[];
  /** Per-axis shares, one per rank, in place of `fractions` for that axis, e.g. `{heads: [8, 4]}`. */
  axes?: AxisSplit;
  /** MLP units per block for uneven splits (default: the largest power of two ≤ 64 dividing hidden_dim). */
  hiddenBlock?: number;
}

/** What a split must keep whole: every rank's first query head is a multiple of `heads`, and MLP units go in groups of `hidden`. */
export interface SplitUnits {
  heads: number;
  hidden: number;
  /** Columns of wo a rank's heads must start on a multiple of (a group, super-block or f16 pair; 1 for f32). */
  headColumns: number;
}

/** Per-rank sizes on each axis. */
export interface AxisSizes {
  heads: number[];
  hidden: number[];
  vocab: number[];
}

export const gcd = (x: number, y: number): number => (y === 0 ? x : gcd(y, x % y));
export const lcm = (a: number, b: number): number => (a / gcd(a, b)) * b;

function orList(xs: readonly number[]): string {
  return xs.length === 1 ? `${xs[0]}` : `${xs.slice(0, -1).join(', ')} or ${xs[xs.length - 1]}`;
}

/** The even degrees that keep `u` whole and give every rank MLP units and vocab rows. */
export function degreesIn(config: ModelConfig, u: SplitUnits): number[] {
  const out: number[] = [];
  for (let d = 1; d <= config.nHeads; d++) {
    const heads = config.nHeads / d;
    if (Number.isInteger(heads) && heads % u.heads === 0 && config.hiddenDim / u.hidden >= d && config.vocabSize >= d) out.push(d);
  }
  return out;
}

/** The error for a degree that does not divide the heads (or is no degree at all): it lists the valid ones. */
export function degreeError(config: ModelConfig, tp: unknown, u: SplitUnits): PlanError {
  const nHeads = config.nHeads;
  return new PlanError(
    `tensorParallel must divide the ${nHeads} heads: use ${orList(degreesIn(config, u))} (got ${String(tp)})`,
    `Pick one of those degrees, or pass explicit fractions (at most ${nHeads}) for an uneven split`,
  );
}

/**
 * Heads per rank for `world` ranks in runs of whole `unit`s, as evenly as they go (first ranks
 * get the extra unit; a short last unit goes to the last rank), or undefined when there are
 * fewer units than ranks.
 */
export function wholeUnitHeads(nHeads: number, unit: number, world: number): number[] | undefined {
  const units = Math.ceil(nHeads / unit);
  if (world < 1 || units < world) return undefined;
  const heads = evenSizes(units, world).map((n) => n * unit);
  heads[world - 1]! -= units * unit - nHeads;
  return heads;
}

/**
 * The split for `d` ranks: even where that keeps `u` whole; else, for a degree that divides the
 * heads, the heads alone in whole units (`{heads: [8, 4]}` for 12 heads in runs of 4), the MLP
 * and vocab even; undefined when neither gives every rank something.
 */
export function splitForDegree(config: ModelConfig, u: SplitUnits, d: number): SplitOptions | undefined {
  if (degreesIn(config, u).includes(d)) return { tensorParallel: d };
  // Only a degree the heads divide, whose even split a unit of wo rules out: the per-axis split replaces that one.
  if (!Number.isInteger(d) || d < 2 || config.nHeads % d !== 0 || config.hiddenDim / u.hidden < d || config.vocabSize < d) return undefined;
  const heads = wholeUnitHeads(config.nHeads, u.heads, d);
  return heads ? { tensorParallel: d, axes: { heads } } : undefined;
}

/** A split's remedy text for `d` ranks when the even split cuts a unit: the per-axis split that works, if one does. */
export function perAxisRemedy(config: ModelConfig, u: SplitUnits, d: number): string {
  const heads = splitForDegree(config, u, d)?.axes?.heads;
  if (!heads) return '';
  return `; at ${d} ranks, split the heads alone: split {heads: [${heads.join(', ')}]} (CLI --split heads=${heads.join(',')}), which keeps the MLP and vocab even`;
}

/**
 * What a validator of shares calls the lists it checks, and the error class it throws: the
 * plan's `fractions` and `axes` (PlanError), or the SDK's `split` option (InvalidArgumentError).
 */
export interface SharesCheck {
  fractions: string;
  axes: string;
  Err: new (message: string, remedy?: string) => WebGpuTpError;
}

const PLAN_CHECK: SharesCheck = { fractions: 'fractions', axes: 'axes', Err: PlanError };

function checkShares(what: string, xs: unknown, Err: SharesCheck['Err']): readonly number[] {
  if (!Array.isArray(xs) || xs.length < 1 || xs.some((f) => !(typeof f === 'number' && Number.isFinite(f) && f > 0))) {
    throw new Err(`${what} must be a non-empty list of positive numbers, got [${String(xs)}]`);
  }
  return [...(xs as readonly number[])];
}

/**
 * The rank count `opts` gives (undefined when it names none), every list of shares checked: known
 * axes, positive numbers, one per rank; `lists` holds each axis's shares (`fractions` filling in).
 */
export function worldOf(opts: SplitOptions, check: SharesCheck = PLAN_CHECK): { world: number | undefined; lists: Partial<Record<AxisName, readonly number[]>> } {
  const { tensorParallel: tp, fractions, axes } = opts;
  const { Err } = check;
  const all = fractions === undefined ? undefined : checkShares(check.fractions, fractions, Err);
  if (tp !== undefined && all && tp !== all.length) {
    throw new Err(`tensorParallel ${tp} does not match the ${all.length} fractions`, 'Give one fraction per rank');
  }
  let world = all?.length ?? tp;
  const lists: Partial<Record<AxisName, readonly number[]>> = {};
  if (axes !== undefined) {
    if (typeof axes !== 'object' || axes === null) throw new Err(`${check.axes} must be an object of per-rank shares (${AXIS_NAMES.join(', ')}), got ${String(axes)}`);
    const unknown = Object.keys(axes).filter((k) => (axes as Record<string, unknown>)[k] !== undefined && !(AXIS_NAMES as readonly string[]).includes(k));
    if (unknown.length) throw new Err(`${check.axes} has no axis ${unknown.join(', ')}: the axes are ${AXIS_NAMES.join(', ')}`, 'KV heads follow the query heads');
    for (const a of AXIS_NAMES) {
      if (axes[a] === undefined) continue;
      const xs = checkShares(`the ${a} shares`, axes[a], Err);
      if (world !== undefined && xs.length !== world) {
        throw new Err(`the ${a} shares name ${xs.length} ranks, but the split has ${world}`, 'Give every axis one share per rank');
      }
      world = xs.length;
      lists[a] = xs;
    }
  }
  for (const a of AXIS_NAMES) if (all && !lists[a]) lists[a] = all;
  return { world, lists };
}

function defaultHiddenBlock(hiddenDim: number): number {
  let b = 64;
  while (hiddenDim % b !== 0) b /= 2;
  return b;
}

/**
 * Each rank's query heads, MLP units and vocab rows: every rank gets heads, MLP units go in
 * whole groups of `u.hidden`. The plan then checks that the heads start on whole units of wo
 * (it names the unit), and `checkEveryRankGets`.
 */
export function axisSizes(config: ModelConfig, opts: SplitOptions, u: SplitUnits): AxisSizes {
  const nHeads = config.nHeads;
  const { world, lists } = worldOf(opts);
  if (!lists.heads && (world === undefined || !Number.isInteger(world) || world < 1 || nHeads % world !== 0)) {
    throw degreeError(config, opts.tensorParallel ?? world, u);
  }
  if (world === undefined) throw degreeError(config, undefined, u);
  if (world > nHeads) throw new PlanError(`${world} ranks cannot share ${nHeads} heads: use at most ${nHeads} fractions`);
  const heads = lists.heads ? proportionalSizes(nHeads, lists.heads) : evenSizes(nHeads, world);
  const empty = heads.findIndex((s) => s === 0);
  if (empty >= 0) {
    throw new PlanError(
      `rank ${empty}'s fraction ${lists.heads![empty]} gives it none of the ${nHeads} query heads (split: ${heads.join(', ')})`,
      'Raise its fraction or use fewer ranks',
    );
  }
  if (config.hiddenDim % u.hidden !== 0) {
    throw new PlanError(`hidden_dim ${config.hiddenDim} does not split into whole quantisation groups of ${u.hidden}`, 'The model file is inconsistent');
  }
  let hidden: number[];
  if (lists.hidden) {
    const block = opts.hiddenBlock ?? defaultHiddenBlock(config.hiddenDim);
    if (!Number.isInteger(block) || block < 1) throw new PlanError(`hiddenBlock must be a positive integer, got ${block}`);
    hidden = proportionalSizes(config.hiddenDim, lists.hidden, lcm(block, u.hidden));
  } else {
    hidden = evenSizes(config.hiddenDim / u.hidden, world).map((n) => n * u.hidden);
  }
  const vocab = lists.vocab ? proportionalSizes(config.vocabSize, lists.vocab) : evenSizes(config.vocabSize, world);
  return { heads, hidden, vocab };
}

/** A PlanError unless every rank gets MLP units and vocab rows. */
export function checkEveryRankGets(s: AxisSizes): void {
  for (const [what, sizes] of [['MLP hidden units', s.hidden], ['vocab rows', s.vocab]] as const) {
    const r = sizes.findIndex((n) => n === 0);
    if (r >= 0) throw new PlanError(`rank ${r} gets none of the ${what} (split: ${sizes.join(', ')})`, 'Use fewer ranks or a larger fraction for it');
  }
}
