/**
 * Whether a CPU rank fits its WebAssembly memory. A CPU rank keeps its shard, its KV cache and
 * its activations in one `WebAssembly.Memory`, and wasm32 addresses at most 4 GiB, so a model
 * too large for one rank must be split over more. Counted from the plan before anything loads,
 * the way workers/cpu-backend.ts allocates.
 */
import { RankMemoryError } from '../errors.js';
import type { ModelConfig, TensorInfo } from '../model/config.js';
import { llama2cTensorTable } from '../model/formats/llama2c.js';
import { evenDegrees, makePlan, quantGroupBytes, styleFor, type Plan, type PlanOptions, type QuantDtype, type RankPlan } from '../parallel/plan.js';
import { q8mTileExtraBytes } from '../cpu/kquant-bytes.js';
import { int8ActivationBytes } from '../cpu/quant-bytes.js';

/** wasm32's limit: 65536 pages of 64 KiB. */
export const WASM_MEMORY_BYTES = 2 ** 32;

/** The room a rank's memory starts with beyond its shard (CpuKernels.create). */
const HEADROOM = 1 << 20;

/** What the state's size depends on. */
export interface CpuStateSizes {
  contextLength: number;
  /** KV-cache slots (the engine's maxBatch). */
  maxBatch: number;
  /** Rows per step (the engine's maxRows). */
  maxRows: number;
  /** Bytes per cached K or V value: 4 (f32) or 2 (f16). */
  kvBytes: number;
  /** Quantised matmuls quantise their input rows first (a scratch of maxRows int8 rows). */
  int8Activations?: boolean;
}

/** One CPU rank's memory, by what fills it (bytes). */
export interface CpuRankBytes {
  shard: number;
  kvCache: number;
  activations: number;
  total: number;
}

/** What a rank's memory depends on: its ranges, and the bytes of its shard. */
export type RankShape = Pick<RankPlan, 'rank' | 'heads' | 'kvHeads' | 'hidden' | 'vocab' | 'byteLength'> & {
  /** Bytes its tiles take beyond the shard (src/cpu/kquant-bytes.ts); counted from the slices when it has them. */
  tileExtra?: number;
  slices?: RankPlan['slices'];
};

/** The memory rank `r` of a plan needs on a CPU rank. */
export function cpuRankBytes(c: ModelConfig, r: RankShape, s: CpuStateSizes): CpuRankBytes {
  const hs = c.headSize;
  const heads = r.heads[1] - r.heads[0];
  const kv = r.kvHeads[1] - r.kvHeads[0];
  const hidden = r.hidden[1] - r.hidden[0];
  const vocab = r.vocab[1] - r.vocab[0];
  const m = s.maxRows;
  const logitRows = Math.min(s.maxBatch, s.maxRows);
  const qkv = (heads + 2 * kv) * hs;
  // tokens/positions/slots; x, xn, partial; qkv; att; w1|w3 and the SiLU product; the logit rows; scores; RoPE cos and sin.
  const floats = 3 * m + 3 * m * c.dim + m * qkv + m * heads * hs + 3 * m * hidden + logitRows * (c.dim + vocab) + s.contextLength + s.contextLength * hs;
  // The int8 rows of the widest input.
  const int8Rows = s.int8Activations ? int8ActivationBytes(m, Math.max(c.dim, heads * hs, hidden)) : 0;
  const activations = floats * 4 + int8Rows;
  const kvCache = c.nLayers * 2 * s.maxBatch * kv * s.contextLength * hs * s.kvBytes;
  const shard = r.byteLength + (r.tileExtra ?? [...q8mTileExtraBytes(r.slices ?? []).values()].reduce((a, b) => a + b, 0));
  return { shard, kvCache, activations, total: shard + Math.max(HEADROOM, kvCache + activations) };
}

/** The largest of the ranks that are CPU ranks (`cpu[rank]` true), or undefined when none is. */
export function largestCpuRank(c: ModelConfig, ranks: readonly RankShape[], cpu: readonly boolean[], s: CpuStateSizes): (CpuRankBytes & { rank: number }) | undefined {
  let best: (CpuRankBytes & { rank: number }) | undefined;
  for (const r of ranks) {
    if (!cpu[r.rank]) continue;
    const b = cpuRankBytes(c, r, s);
    if (!best || b.total > best.total) best = { ...b, rank: r.rank };
  }
  return best;
}

/** The ranks of an even `d`-rank plan (see `rankShapes`). */
export function evenRankShapes(c: ModelConfig, tensors: readonly TensorInfo[] | undefined, d: number): RankShape[] {
  return rankShapes(c, tensors, { tensorParallel: d });
}

/**
 * The ranks of the plan `opts` gives without slicing every row of every layer: the ranges come
 * from the plan of the first layer (every layer has the same shapes), and each tensor's share is
 * its bytes in proportion to the rows or columns the rank owns.
 */
export function rankShapes(c: ModelConfig, tensors: readonly TensorInfo[] = llama2cTensorTable(c), opts: PlanOptions): RankShape[] {
  const firstLayer = tensors.filter((t) => !t.name.startsWith('layers.') || t.name.startsWith('layers.0.'));
  const extra = q8mTileExtraBytes(tensors);
  return makePlan(c, opts, firstLayer).ranks.map((r) => {
    let byteLength = 0;
    let tileExtra = 0;
    for (const t of tensors) {
      const st = styleFor(t.name);
      // A quantised tensor's byteLength is its values; its scales (q8_m: (scale, min) pairs), one a group, come with them.
      const bytes = t.byteLength + (t.quant ? ((t.shape[0] * t.shape[1]) / t.quant.groupSize) * quantGroupBytes(t.dtype as QuantDtype) : 0);
      const share = st.style === 'replicated' ? 1 : (() => {
        const [a, b] = st.style === 'vocab' ? r.vocab : st.by === 'hidden' ? r.hidden : st.by === 'heads' ? r.heads : r.kvHeads;
        const unit = st.style === 'vocab' || st.by === 'hidden' ? 1 : c.headSize;
        return ((b - a) * unit) / (st.style === 'row' ? t.shape[1] : t.shape[0]);
      })();
      byteLength += bytes * share;
      tileExtra += (extra.get(t.name) ?? 0) * share;
    }
    return { rank: r.rank, heads: r.heads, kvHeads: r.kvHeads, hidden: r.hidden, vocab: r.vocab, byteLength, ...(tileExtra ? { tileExtra } : {}) };
  });
}

/** Whether every rank of an even `d`-rank plan (or of the plan `d` gives) fits one memory as a CPU rank. */
export function cpuFitsAt(c: ModelConfig, tensors: readonly TensorInfo[] | undefined, d: number | PlanOptions, s: CpuStateSizes, limit = WASM_MEMORY_BYTES): boolean {
  const ranks = rankShapes(c, tensors, typeof d === 'number' ? { tensorParallel: d } : d);
  return largestCpuRank(c, ranks, ranks.map(() => true), s)!.total <= limit;
}

/** The smallest even degree at which every CPU rank fits, or undefined when none does. */
export function smallestCpuDegree(c: ModelConfig, tensors: readonly TensorInfo[] | undefined, s: CpuStateSizes, limit = WASM_MEMORY_BYTES): number | undefined {
  return evenDegrees(c, tensors).find((d) => cpuFitsAt(c, tensors, d, s, limit));
}

/**
 * Throws `RankMemoryError` unless every CPU rank of `plan` fits one memory; the error names
 * the smallest degree of CPU ranks that does.
 */
export function checkCpuRanksFit(
  c: ModelConfig, tensors: readonly TensorInfo[] | undefined, plan: Plan, cpu: readonly boolean[], s: CpuStateSizes, limit = WASM_MEMORY_BYTES,
): void {
  const big = largestCpuRank(c, plan.ranks, cpu, s);
  if (!big || big.total <= limit) return;
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
  const what = `rank ${big.rank}: shard ${mib(big.shard)} + KV cache ${mib(big.kvCache)} + activations ${mib(big.activations)}`;
  throw new RankMemoryError(plan.world, big.total, limit, what, smallestCpuDegree(c, tensors, s, limit));
}
