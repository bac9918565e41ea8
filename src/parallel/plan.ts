/**
 * The sharding plan, PyTorch style: a plain object from weight-name patterns to styles, and one
 * function (`makePlan`) that turns it, a model config and a tensor table into per-rank slices.
 *
 * Styles (Megatron's names in brackets):
 *   column     split by output rows      (ColumnParallelLinear): wq, wk, wv, w1, w3, and q/k/v biases
 *   row        split by input columns    (RowParallelLinear): wo, w2; partial sums are all-reduced
 *   vocab      classifier rows split over the vocabulary; each rank's logits slice goes to its own
 *              region of shared memory, read there in rank order (never all-gathered)
 *   replicated every rank holds the whole tensor: norms, the embedding
 *
 * A slice is the list of file byte ranges a rank needs for one tensor and where each lands in
 * the rank's dense buffer for that tensor. Column and vocab slices are one range; row slices are
 * one short run per row (the rank's columns of it). Splitting the weights lives here; moving the
 * activations is the collectives' job.
 *
 * Quantised tensors (q8_0: int8 values, q4_0: packed nibbles, each plus an f32 scale per group of
 * a row) are sliced the same way, plane by plane: the rank's values, then their scales. A group
 * never straddles a shard boundary: the MLP split is made in whole groups, and a head split that
 * would cut a group of wo's columns is a PlanError. f16 tensors (GGUF F16 matrices, halves) are
 * sliced like f32 ones, with the kernels' constraint that a rank's columns never split a pair of
 * halves (the GPU reads them two per u32): row splits are made at even columns, like a group of 2.
 */
import { PlanError } from '../errors.js';
import type { ModelConfig, TensorInfo } from '../model/config.js';
import { llama2cTensorTable } from '../model/formats/llama2c.js';
import {
  axisSizes, checkEveryRankGets, degreeError as degreeErrorIn, degreesIn, gcd, lcm, perAxisRemedy, splitForDegree, type SplitOptions, type SplitUnits,
} from './axis-split.js';
import { type Range, rangesFromSizes } from './split.js';

export type { AxisName, AxisSplit, SplitUnits } from './axis-split.js';

/** Bumped whenever slicing changes, so cached shards keyed by `sliceListHash` are not reused. */
export const planVersion = 1;

export type ShardStyle = 'column' | 'row' | 'vocab' | 'replicated';

/** The per-rank range a split dimension follows: query heads, KV heads or MLP hidden units. */
export type SplitAxis = 'heads' | 'kvHeads' | 'hidden';

export type ShardSpec =
  | { style: 'column'; by: SplitAxis }
  | { style: 'row'; by: SplitAxis }
  | { style: 'vocab' }
  | { style: 'replicated' };

export const column = (by: SplitAxis): ShardSpec => ({ style: 'column', by });
export const row = (by: SplitAxis): ShardSpec => ({ style: 'row', by });
export const vocab: ShardSpec = { style: 'vocab' };
export const replicated: ShardSpec = { style: 'replicated' };

/** Pattern → style. `*` matches one dotted segment; the first matching pattern wins. */
export type PlanSpec = Readonly<Record<string, ShardSpec>>;

/** Megatron-style tensor parallelism for Llama: two all-reduces per layer; the logits stay split. */
export const llamaPlan: PlanSpec = {
  tok_embeddings: replicated,
  'layers.*.attention_norm': replicated,
  'layers.*.attention.wq': column('heads'),
  'layers.*.attention.wk': column('kvHeads'),
  'layers.*.attention.wv': column('kvHeads'),
  // q/k/v biases (Qwen2), [rows, 1]: split with their matrix's rows.
  'layers.*.attention.bq': column('heads'),
  'layers.*.attention.bk': column('kvHeads'),
  'layers.*.attention.bv': column('kvHeads'),
  // Per-head q/k norms (Qwen3), (head_size): one weight for every head, so every rank holds it.
  'layers.*.attention.q_norm': replicated,
  'layers.*.attention.k_norm': replicated,
  'layers.*.attention.wo': row('heads'),
  // o_proj's bias: every rank holds it; it is added once, to the all-reduced sum.
  'layers.*.attention.bo': replicated,
  'layers.*.ffn_norm': replicated,
  'layers.*.feed_forward.w1': column('hidden'),
  'layers.*.feed_forward.w3': column('hidden'),
  'layers.*.feed_forward.w2': row('hidden'),
  norm: replicated,
  output: vocab,
};

export interface ByteRange {
  /** Where the bytes start in the model file. */
  fileOffset: number;
  length: number;
  /** Where they go in the rank's dense buffer for this tensor. */
  dstOffset: number;
}

export interface TensorSlice {
  name: string;
  style: ShardStyle;
  dtype: TensorInfo['dtype'];
  /**
   * Quantised dtypes: values per scale. The dense slice is its shape's values plane (q8_0: one
   * int8 each, q4_0: two nibbles a byte, GGML order within each group of 32), padded to a
   * multiple of 4 bytes, then one f32 scale per group of each row (`quantScalesOffset`).
   */
  groupSize?: number;
  /** The rank's dense shard, [rows, cols] = [out, in], e.g. wq: (heads/tp * head_size, dim). */
  shape: [number, number];
  byteLength: number;
  /** In file order; adjacent runs are merged (a row slice at tp = 1 is one range). */
  ranges: ByteRange[];
}

export interface RankPlan {
  rank: number;
  /** Query heads [start, end). */
  heads: Range;
  /** KV heads [start, end): the ones this rank's query heads read (shared with other ranks when tp > n_kv_heads). */
  kvHeads: Range;
  /** MLP hidden units [start, end). */
  hidden: Range;
  /** Vocabulary rows of the classifier [start, end). */
  vocab: Range;
  /** One per tensor, in tensor-table order. */
  slices: TensorSlice[];
  /** Sum of the slices' byteLength: what this rank uploads. */
  byteLength: number;
}

export interface Plan {
  planVersion: number;
  world: number;
  /** n_heads / n_kv_heads: query head h reads kv head floor(h / kvMul). */
  kvMul: number;
  ranks: RankPlan[];
}

/** How to split: a degree, per-rank `fractions` for every axis, and per-axis overrides (`axes`). */
export type PlanOptions = SplitOptions;

function patternRegex(pattern: string): RegExp {
  const escaped = pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${escaped.join('[^.]+')}$`);
}

/** The style for one tensor name, or a PlanError naming it. */
export function styleFor(name: string, spec: PlanSpec = llamaPlan): ShardSpec {
  for (const [pattern, s] of Object.entries(spec)) if (patternRegex(pattern).test(name)) return s;
  throw new PlanError(`No plan entry matches tensor "${name}"`, `Add a pattern for it (one of: ${Object.keys(spec).join(', ')})`);
}

/** The error for a degree that does not divide the heads (or is no degree at all): it lists the valid ones. */
export function degreeError(config: ModelConfig, tp: unknown, tensors?: readonly TensorInfo[], spec?: PlanSpec): PlanError {
  return degreeErrorIn(config, tp, splitUnits(config, tensors, spec));
}

/** Which rows (column/vocab) or columns (row) of a tensor a rank owns, in elements. */
function ownedRange(spec: ShardSpec, r: Omit<RankPlan, 'slices' | 'byteLength' | 'rank'>, c: ModelConfig): Range {
  if (spec.style === 'vocab') return r.vocab;
  if (spec.style === 'replicated') throw new Error('unreachable: replicated tensors are not split');
  if (spec.by === 'hidden') return r.hidden;
  const [a, b] = spec.by === 'heads' ? r.heads : r.kvHeads;
  return [a * c.headSize, b * c.headSize];
}

function expectedSplitExtent(spec: ShardSpec, c: ModelConfig): { extent: number; what: string } {
  if (spec.style === 'vocab') return { extent: c.vocabSize, what: `vocab_size ${c.vocabSize}` };
  if (spec.style === 'replicated') return { extent: 0, what: '' };
  if (spec.by === 'hidden') return { extent: c.hiddenDim, what: `hidden_dim ${c.hiddenDim}` };
  const n = spec.by === 'heads' ? c.nHeads : c.nKvHeads;
  return { extent: n * c.headSize, what: `${n} ${spec.by === 'heads' ? 'heads' : 'kv heads'} × ${c.headSize}` };
}

function mergeAdjacent(ranges: ByteRange[]): ByteRange[] {
  const out: ByteRange[] = [];
  for (const r of ranges) {
    const last = out[out.length - 1];
    if (last && last.fileOffset + last.length === r.fileOffset && last.dstOffset + last.length === r.dstOffset) last.length += r.length;
    else out.push({ ...r });
  }
  return out;
}

export type QuantDtype = 'q8_0' | 'q4_0' | 'q8_m';

/** Bytes of the values plane of `values` quantised values: an int8 each (q8_0), a byte code (q8_m) or a nibble (q4_0). */
export function quantPlaneBytes(dtype: QuantDtype, values: number): number {
  return dtype === 'q4_0' ? values / 2 : values;
}

/** Bytes per group in the scales plane: an f32 scale, or q8_m's (scale, min) pair. */
export function quantGroupBytes(dtype: QuantDtype): number {
  return dtype === 'q8_m' ? 8 : 4;
}

/** Where a quantised slice of `values` values puts its scales: the plane's end, rounded up to 4 bytes. */
export function quantScalesOffset(dtype: QuantDtype, values: number): number {
  return Math.ceil(quantPlaneBytes(dtype, values) / 4) * 4;
}

/** Where a q8_0 slice of `values` int8 values puts its scales: the next 4-byte boundary. */
export function q8ScalesOffset(values: number): number {
  return quantScalesOffset('q8_0', values);
}

/** Groups of these dtypes have one fixed size (GGML's blocks). */
const FIXED_GROUP: Partial<Record<TensorInfo['dtype'], number>> = { q4_0: 32 };

/** A quantised tensor's groups must tile its rows; q4_0's are GGML's 32. f16 rows hold whole pairs. */
function checkQuantised(t: TensorInfo): void {
  if (t.dtype === 'f32') return;
  if (t.dtype === 'f16') {
    if (t.shape[1] % 2 !== 0) {
      throw new PlanError(`${t.name}: f16 rows are read as pairs of halves, got rows of ${t.shape[1]} values`, 'Keep this tensor in f32 (an odd row length cannot be packed two halves per u32)');
    }
    return;
  }
  const g = t.quant?.groupSize;
  const fixed = FIXED_GROUP[t.dtype];
  if (g === undefined || !(g > 0) || (fixed !== undefined && g !== fixed)) {
    throw new PlanError(`${t.name}: a ${t.dtype} tensor needs a group size${fixed ? ` of ${fixed}` : ''}, got ${String(g)}`, 'The tensor table does not match its format');
  }
  if (t.shape[1] % g !== 0) {
    throw new PlanError(
      `${t.name}: ${t.dtype} groups of ${g} must tile its rows of ${t.shape[1]} values, got ${t.shape[1] % g} left over`,
      `Keep this tensor in f32 (or a dtype whose groups divide ${t.shape[1]})`,
    );
  }
}

function sliceTensor(t: TensorInfo, spec: ShardSpec, own: Range | null): TensorSlice {
  if (t.dtype === 'q8_0' || t.dtype === 'q4_0' || t.dtype === 'q8_m') return sliceQuant(t, t.dtype, spec, own);
  const [rows, cols] = t.shape;
  const el = t.dtype === 'f16' ? 2 : 4;
  if (spec.style === 'replicated' || own === null) {
    return { name: t.name, style: spec.style, dtype: t.dtype, shape: [rows, cols], byteLength: t.byteLength, ranges: [{ fileOffset: t.offset, length: t.byteLength, dstOffset: 0 }] };
  }
  const [a, b] = own;
  if (spec.style === 'row') {
    // the rank's columns of every row: one short run per row
    const run = (b - a) * el;
    const ranges: ByteRange[] = [];
    for (let i = 0; i < rows; i++) ranges.push({ fileOffset: t.offset + (i * cols + a) * el, length: run, dstOffset: i * run });
    return { name: t.name, style: 'row', dtype: t.dtype, shape: [rows, b - a], byteLength: rows * run, ranges: mergeAdjacent(ranges) };
  }
  // column and vocab: a contiguous block of whole rows
  const length = (b - a) * cols * el;
  return { name: t.name, style: spec.style, dtype: t.dtype, shape: [b - a, cols], byteLength: length, ranges: [{ fileOffset: t.offset + a * cols * el, length, dstOffset: 0 }] };
}

/**
 * A quantised slice: the values plane, then the scales plane, each cut like an f32 tensor.
 * Element offsets are whole groups (a and b of a row split are group-aligned), so a q4_0 run of
 * them starts and ends on a byte: group g of a row is its 16 bytes, whatever the nibble order inside.
 */
function sliceQuant(t: TensorInfo, dtype: QuantDtype, spec: ShardSpec, own: Range | null): TensorSlice {
  const [rows, cols] = t.shape;
  const g = t.quant!.groupSize;
  const gb = quantGroupBytes(dtype);
  const scaleOffset = t.quant!.scaleOffset;
  const bytes = (values: number) => quantPlaneBytes(dtype, values);
  const whole = spec.style === 'replicated' || own === null;
  const [a, b] = whole ? [0, rows] : own;
  let shape: [number, number];
  const ranges: ByteRange[] = [];
  if (spec.style === 'row' && !whole) {
    // the rank's columns of every row, and the scales of their groups
    shape = [rows, b - a];
    const sd = quantScalesOffset(dtype, rows * (b - a));
    for (let i = 0; i < rows; i++) ranges.push({ fileOffset: t.offset + bytes(i * cols + a), length: bytes(b - a), dstOffset: i * bytes(b - a) });
    for (let i = 0; i < rows; i++) {
      ranges.push({ fileOffset: scaleOffset + ((i * cols + a) / g) * gb, length: ((b - a) / g) * gb, dstOffset: sd + i * ((b - a) / g) * gb });
    }
  } else {
    // whole rows a..b: one run of values, one of scales
    shape = [b - a, cols];
    ranges.push({ fileOffset: t.offset + bytes(a * cols), length: bytes((b - a) * cols), dstOffset: 0 });
    ranges.push({ fileOffset: scaleOffset + ((a * cols) / g) * gb, length: (((b - a) * cols) / g) * gb, dstOffset: quantScalesOffset(dtype, (b - a) * cols) });
  }
  const byteLength = quantScalesOffset(dtype, shape[0] * shape[1]) + ((shape[0] * shape[1]) / g) * gb;
  return { name: t.name, style: spec.style, dtype, groupSize: g, shape, byteLength, ranges: mergeAdjacent(ranges) };
}

/** Columns a split must keep together: a K-quant super-block, a quantisation group, a pair of f16 halves (one u32), else 1. */
function splitUnit(t: TensorInfo): number {
  return t.quant?.block ?? t.quant?.groupSize ?? (t.dtype === 'f16' ? 2 : 1);
}

/** The quantisation group (or f16 pair) of the tensors split along `axis` by rows of their input (row style), or 1. */
function rowSplitGroup(tensors: readonly TensorInfo[], specs: readonly ShardSpec[], axis: SplitAxis): number {
  let g = 1;
  tensors.forEach((t, i) => {
    const s = specs[i]!;
    if (s.style === 'row' && s.by === axis) g = lcm(g, splitUnit(t));
  });
  return g;
}

function unitsOf(config: ModelConfig, tensors: readonly TensorInfo[], specs: readonly ShardSpec[]): SplitUnits {
  const headColumns = rowSplitGroup(tensors, specs, 'heads');
  return { heads: headColumns / gcd(headColumns, config.headSize), hidden: rowSplitGroup(tensors, specs, 'hidden'), headColumns };
}

/** The units `tensors` must be split in (their quantisation groups, K-quant super-blocks or f16 pairs). */
export function splitUnits(config: ModelConfig, tensors: readonly TensorInfo[] = llama2cTensorTable(config), spec: PlanSpec = llamaPlan): SplitUnits {
  return unitsOf(config, tensors, tensors.map((t) => styleFor(t.name, spec)));
}

/**
 * The even degrees `makePlan` accepts for `tensors`: those that divide the query heads, start
 * every rank's heads on a whole group (or K-quant super-block) of wo's columns, and give every
 * rank MLP units and vocab rows. Every degree search (auto's included) starts from these.
 */
export function evenDegrees(config: ModelConfig, tensors: readonly TensorInfo[] = llama2cTensorTable(config), spec: PlanSpec = llamaPlan): number[] {
  return degreesIn(config, splitUnits(config, tensors, spec));
}

/**
 * The split `d` ranks take for `tensors`: even where that keeps every group and super-block of
 * wo whole, else the heads alone in whole blocks with the MLP and vocab even (`{heads: [8, 4]}`
 * for a 768-wide K-quant at TP 2); undefined when no split at `d` gives every rank something.
 */
export function degreeSplit(config: ModelConfig, d: number, tensors: readonly TensorInfo[] = llama2cTensorTable(config), spec: PlanSpec = llamaPlan): PlanOptions | undefined {
  return splitForDegree(config, splitUnits(config, tensors, spec), d);
}

/**
 * Splits a model over ranks. Query heads split evenly (or by their shares: `axes.heads`, else
 * `fractions`); each rank gets the KV heads its query heads read, so KV heads are split when
 * tp ≤ n_kv_heads and replicated when tp > n_kv_heads; MLP units and vocab rows split as evenly
 * as possible (first ranks get the extra) or by their shares.
 */
export function makePlan(
  config: ModelConfig, opts: PlanOptions, tensors: readonly TensorInfo[] = llama2cTensorTable(config), spec: PlanSpec = llamaPlan,
): Plan {
  const kvMul = config.nHeads / config.nKvHeads;
  if (!Number.isInteger(kvMul)) {
    throw new PlanError(`n_kv_heads must divide n_heads, got ${config.nHeads} heads and ${config.nKvHeads} kv heads`);
  }
  // Check every tensor's split dimension before slicing anything.
  const specs = tensors.map((t) => {
    checkQuantised(t);
    const s = styleFor(t.name, spec);
    const { extent, what } = expectedSplitExtent(s, config);
    const actual = s.style === 'row' ? t.shape[1] : t.shape[0];
    if (s.style !== 'replicated' && actual !== extent) {
      const dim = s.style === 'row' ? 'columns' : 'rows';
      throw new PlanError(`${t.name}: a ${s.style} split expects ${extent} ${dim} (${what}), got ${actual}`, 'The tensor table does not match the config');
    }
    return s;
  });

  // Quantisation groups of row-split tensors must not straddle ranks: split in whole groups.
  const units = unitsOf(config, tensors, specs);
  const sizes = axisSizes(config, opts, units);
  const { heads, hidden, vocab: vocabRows } = sizes;
  const world = heads.length;
  const headGroup = units.headColumns;
  for (const [r, [h0]] of rangesFromSizes(heads).entries()) {
    if ((h0 * config.headSize) % headGroup !== 0) {
      const unit = headGroup === 2 ? 'a pair of f16 halves (one u32)'
        : tensors.some((t) => t.quant?.block === headGroup) ? `a K-quant super-block of ${headGroup}` : `a quantisation group of ${headGroup}`;
      throw new PlanError(
        `rank ${r}'s heads start at column ${h0 * config.headSize} of wo, inside ${unit} (head size ${config.headSize}); even splits that keep them whole: tensorParallel ${degreesIn(config, units).join(', ')}`,
        `Use one of those degrees, or a split whose ranks' heads start on multiples of ${units.heads} heads (every split works when the head size is a multiple of ${headGroup})${perAxisRemedy(config, units, world)}`,
      );
    }
  }
  checkEveryRankGets(sizes);

  const headRanges = rangesFromSizes(heads);
  const hiddenRanges = rangesFromSizes(hidden);
  const vocabRanges = rangesFromSizes(vocabRows);
  const ranks: RankPlan[] = headRanges.map((h, rank) => {
    const owned = {
      heads: h,
      kvHeads: [Math.floor(h[0] / kvMul), Math.floor((h[1] - 1) / kvMul) + 1] as Range,
      hidden: hiddenRanges[rank]!,
      vocab: vocabRanges[rank]!,
    };
    const slices = tensors.map((t, i) => {
      const s = specs[i]!;
      return sliceTensor(t, s, s.style === 'replicated' ? null : ownedRange(s, owned, config));
    });
    return { rank, ...owned, slices, byteLength: slices.reduce((n, s) => n + s.byteLength, 0) };
  });
  return { planVersion, world, kvMul, ranks };
}

/** The rank-local KV head that the rank's local query head `localHead` reads. */
export function localKvHead(plan: Plan, rank: RankPlan, localHead: number): number {
  return Math.floor((rank.heads[0] + localHead) / plan.kvMul) - rank.kvHeads[0];
}

/** A rank's sizes, from its plan: what its weights and activations hold. */
export interface RankDims {
  dim: number;
  headSize: number;
  nHeads: number; // query heads on this rank
  nKvHeads: number; // KV heads on this rank
  hidden: number; // MLP units on this rank
  vocab: number; // classifier rows on this rank
  qkv: number; // (nHeads + 2·nKvHeads)·headSize
  kvMul: number; // query heads per KV head (n_heads / n_kv_heads)
  /** Local query head h reads local KV head floor((h + headOffset) / kvMul): an uneven split may start a rank's heads inside a KV group. */
  headOffset: number;
}

export function rankDims(c: ModelConfig, r: RankPlan): RankDims {
  const nHeads = r.heads[1] - r.heads[0];
  const nKvHeads = r.kvHeads[1] - r.kvHeads[0];
  const kvMul = c.nHeads / c.nKvHeads;
  return {
    dim: c.dim,
    headSize: c.headSize,
    nHeads,
    nKvHeads,
    hidden: r.hidden[1] - r.hidden[0],
    vocab: r.vocab[1] - r.vocab[0],
    qkv: (nHeads + 2 * nKvHeads) * c.headSize,
    kvMul,
    headOffset: r.heads[0] - r.kvHeads[0] * kvMul,
  };
}

/** A PlanError unless the rank's plan splits `name` by rows: the forward all-reduces that matmul's output. */
export function checkRowSplit(r: RankPlan, name: string): void {
  const style = r.slices.find((t) => t.name === name)?.style;
  if (style !== 'row') throw new PlanError(`${name}: the forward all-reduces its output, so it must be split by rows, got ${style ?? 'no slice'}`);
}

/**
 * Expected uploaded weight bytes for a rank under `llamaPlan`, from the config and the rank's
 * ranges alone (independent of the slice lists): the replicated embedding and norms, plus its
 * share of every projection and of the classifier.
 */
export function rankWeightBytes(c: ModelConfig, r: Pick<RankPlan, 'heads' | 'kvHeads' | 'hidden' | 'vocab'>): number {
  const q = (r.heads[1] - r.heads[0]) * c.headSize;
  const kv = (r.kvHeads[1] - r.kvHeads[0]) * c.headSize;
  const h = r.hidden[1] - r.hidden[0];
  const v = r.vocab[1] - r.vocab[0];
  const perLayer = 2 * c.dim + q * c.dim + 2 * kv * c.dim + c.dim * q + 3 * h * c.dim;
  return 4 * (c.vocabSize * c.dim + c.nLayers * perLayer + c.dim + v * c.dim);
}

/** FNV-1a, 64-bit, over a string's UTF-16 code units (low byte, then high byte if any). */
export function fnv1a64(s: string): string {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  const eat = (byte: number): void => {
    lo = (lo ^ byte) >>> 0;
    // (hi:lo) *= 0x100000001b3, i.e. x * 0x1b3 + (x << 40), mod 2^64
    const p = lo * 0x1b3;
    const carry = Math.floor(p / 0x100000000);
    hi = (Math.imul(hi, 0x1b3) + carry + (lo << 8)) >>> 0;
    lo = p >>> 0;
  };
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    eat(c & 0xff);
    if (c > 0xff) eat(c >>> 8);
  }
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

/** A stable 16-hex-digit hash of what a rank holds, for shard cache keys. */
export function sliceListHash(r: RankPlan): string {
  const parts = [`v${planVersion}`, `h${r.heads}`, `kv${r.kvHeads}`, `mlp${r.hidden}`, `voc${r.vocab}`];
  for (const s of r.slices) {
    parts.push(`${s.name}:${s.style}:${s.shape[0]}x${s.shape[1]}${s.dtype === 'f32' ? '' : s.dtype === 'f16' ? ':f16' : `:${s.dtype}/${s.groupSize}`}`);
    for (const g of s.ranges) parts.push(`${g.fileOffset}+${g.length}@${g.dstOffset}`);
  }
  return fnv1a64(parts.join(';'));
}
