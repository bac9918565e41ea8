/**
 * One rank's part of the model, the way run.c reads: the weights of its shard
 * (`ShardWeights`), the buffers of one step (`RunState`), and `forward`, which runs the
 * rank's part of every layer with the two all-reduces per layer in plain sight.
 *
 * Shapes carry the shard: with tp ranks, `heads/tp` means this rank's query heads (and so on).
 * Row-parallel outputs (wo, w2) are partial sums, rank 0's with the residual added, so that the
 * all-reduced sum (`finishSync`) is the new residual stream itself. At tp = 1
 * there is nothing to reduce, so those matmuls accumulate straight into the residual and the
 * whole step is one submit with one readback (Megatron's single-rank shortcut, at step level).
 */
import type { ModelConfig } from '../src/model/config.js';
import type { RankPlan } from '../src/parallel/plan.js';
import { ropeTables } from '../src/model/reference.js';
import type { GpuContext } from '../src/gpu/core/device.js';
import {
  createMatrix, destroyMatrix, createStorageBuffer, createStepParams, destroyStepParams, writeMatrixRows,
  type Matrix, type StepParams,
} from '../src/gpu/core/buffers.js';
import { createMatmul } from '../src/gpu/kernels/matmul.js';
import { createQuantMatrix, destroyQuantMatrix, isQuantMatrix, writeQuantRows, type QuantMatrix } from '../src/gpu/core/quant-matrix.js';
import type { Q8Activations } from '../src/gpu/kernels/matmul-base.js';
import { createEmbedding } from '../src/gpu/kernels/embed.js';
import { createHalfMatrix, destroyHalfMatrix, isHalfMatrix, writeHalfRows, type HalfMatrix } from '../src/gpu/core/half-matrix.js';
import { commonForm, sliceViews, type SliceView } from './slice-views.js';
import { createRopeTables, destroyRopeTables, createRopeKv, type RopeTables } from '../src/gpu/kernels/rope.js';
import { createKvCache, destroyKvCache, kvLayerBytes, type KvCache } from '../src/gpu/kernels/kv-cache.js';
import type { KvCacheDtype } from '../src/gpu/kernels/kv-format.js';
import { createAttention } from '../src/gpu/kernels/attention.js';
import { createAdd } from '../src/gpu/kernels/elementwise.js';
import { createReadback, destroyReadback, type Readback, type ReadTicket } from '../src/gpu/core/readback.js';
import type { BoundOp } from '../src/gpu/core/op.js';
import type { KernelProfiler } from '../src/gpu/core/profiler.js';
import { InvalidArgumentError, ModelFormatError } from '../src/errors.js';
import type { Communicator } from '../src/collective/communicator.js';
import type { StepInput } from '../src/protocol.js';

/** A weight matrix as the file stores it: f32, f16 kept in f16, or Q8_0 / Q4_0 kept quantised. */
export type Weight = Matrix | QuantMatrix | HalfMatrix;

/** The weights of one rank, on its device. */
export interface ShardWeights {
  tokEmbeddings: Weight; // (vocab, dim), replicated
  layers: LayerWeights[];
  norm: GPUBuffer; // (dim,), replicated
  output: Weight; // (vocab/tp, dim): this rank's rows of the classifier
}

export interface LayerWeights {
  attentionNorm: GPUBuffer; // (dim,)
  wqkv: Weight; // ((heads/tp + 2·kvHeads/tp)·head_size, dim): wq rows, then wk, then wv
  bqkv?: GPUBuffer; // ((heads/tp + 2·kvHeads/tp)·head_size,): bq, bk, bv with their rows (Qwen2)
  wo: Weight; // (dim, heads/tp·head_size): this rank's columns of wo
  bo?: GPUBuffer; // (dim,) replicated: added once, to the all-reduced Wo·att
  ffnNorm: GPUBuffer; // (dim,)
  w13: Weight; // (2·hidden/tp, dim): w1 rows, then w3 rows
  w2: Weight; // (dim, hidden/tp): this rank's columns of w2
}

/** Per-rank sizes, from the plan. */
export interface RankDims {
  dim: number;
  headSize: number;
  nHeads: number; // query heads on this rank
  nKvHeads: number; // KV heads on this rank
  hidden: number; // MLP units on this rank
  vocab: number; // classifier rows on this rank
  qkv: number; // (nHeads + 2·nKvHeads)·headSize
}

export function rankDims(c: ModelConfig, r: RankPlan): RankDims {
  const nHeads = r.heads[1] - r.heads[0];
  const nKvHeads = r.kvHeads[1] - r.kvHeads[0];
  return {
    dim: c.dim,
    headSize: c.headSize,
    nHeads,
    nKvHeads,
    hidden: r.hidden[1] - r.hidden[0],
    vocab: r.vocab[1] - r.vocab[0],
    qkv: (nHeads + 2 * nKvHeads) * c.headSize,
  };
}

/**
 * Uploads a rank's packed shard (its slices, dense, one after the other in plan order) into
 * GPU buffers, fusing wq|wk|wv and w1|w3 into one matrix each so each is one matmul. Q8_0 and
 * Q4_0 slices stay quantised (values and scales, as the plan packs them); parts of one fused
 * matrix stored in different dtypes meet in a common one (`commonForm`).
 */
export function createShardWeights(ctx: GpuContext, c: ModelConfig, r: RankPlan, packed: ArrayBuffer): ShardWeights {
  const d = rankDims(c, r);
  const views = sliceViews(r, packed);
  const view = (name: string): SliceView => {
    const v = views.get(name);
    if (!v) throw new ModelFormatError(`rank ${r.rank}: tensor ${name} is missing from its shard`);
    return v;
  };
  const get = (name: string): Float32Array => {
    const v = view(name);
    if (v.dtype !== 'f32') throw new ModelFormatError(`rank ${r.rank}: tensor ${name} must be f32, got ${v.dtype}`);
    return v.f;
  };
  const matrix = (rows: number, cols: number, label: string, names: string[]): Weight => {
    const parts = commonForm(names.map(view));
    const first = parts[0]!;
    if (first.dtype === 'f16') {
      const m = createHalfMatrix(ctx, rows, cols, label);
      let row = 0;
      for (const [i, p] of parts.entries()) {
        if (p.dtype !== 'f16') throw new ModelFormatError(`${names[i]} must be stored like ${names[0]} to be fused with it`);
        writeHalfRows(ctx, m, row, p.h);
        row += p.h.length / cols;
      }
      return m;
    }
    if (first.dtype !== 'f32') {
      const m = createQuantMatrix(ctx, rows, cols, first.groupSize, label, first.dtype);
      let row = 0;
      for (const [i, p] of parts.entries()) {
        if (p.dtype !== first.dtype || p.groupSize !== first.groupSize) throw new ModelFormatError(`${names[i]} must be stored like ${names[0]} to be fused with it`);
        writeQuantRows(ctx, m, row, p.q, p.s);
        row += (p.s.length * p.groupSize) / cols;
      }
      return m;
    }
    const m = createMatrix(ctx, rows, cols, label);
    let row = 0;
    for (const [i, p] of parts.entries()) {
      if (p.dtype !== 'f32') throw new ModelFormatError(`${names[i]} must be stored like ${names[0]} to be fused with it`);
      writeMatrixRows(ctx, m, row, p.f);
      row += p.f.length / cols;
    }
    return m;
  };
  const layers: LayerWeights[] = [];
  /** Biases of column-parallel rows, fused in the same order as their matrices. */
  const fusedBias = (label: string, parts: Float32Array[]): GPUBuffer => {
    const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) {
      out.set(p, o);
      o += p.length;
    }
    return createStorageBuffer(ctx, out, label);
  };
  for (let l = 0; l < c.nLayers; l++) {
    const p = `layers.${l}.`;
    layers.push({
      ...(c.outBias ? { bo: createStorageBuffer(ctx, get(`${p}attention.bo`), `${p}bo`) } : {}),
      ...(c.qkvBias ? { bqkv: fusedBias(`${p}bqkv`, [get(`${p}attention.bq`), get(`${p}attention.bk`), get(`${p}attention.bv`)]) } : {}),
      attentionNorm: createStorageBuffer(ctx, get(`${p}attention_norm`), `${p}attention_norm`),
      wqkv: matrix(d.qkv, d.dim, `${p}wqkv`, [`${p}attention.wq`, `${p}attention.wk`, `${p}attention.wv`]),
      wo: matrix(d.dim, d.nHeads * d.headSize, `${p}wo`, [`${p}attention.wo`]),
      ffnNorm: createStorageBuffer(ctx, get(`${p}ffn_norm`), `${p}ffn_norm`),
      w13: matrix(2 * d.hidden, d.dim, `${p}w13`, [`${p}feed_forward.w1`, `${p}feed_forward.w3`]),
      w2: matrix(d.dim, d.hidden, `${p}w2`, [`${p}feed_forward.w2`]),
    });
  }
  return {
    tokEmbeddings: matrix(c.vocabSize, d.dim, 'tok_embeddings', ['tok_embeddings']),
    layers,
    norm: createStorageBuffer(ctx, get('norm'), 'norm'),
    output: matrix(d.vocab, d.dim, 'output', ['output']),
  };
}

function destroyWeight(w: Weight): void {
  if (isQuantMatrix(w)) destroyQuantMatrix(w);
  else if (isHalfMatrix(w)) destroyHalfMatrix(w);
  else destroyMatrix(w);
}

export function destroyShardWeights(w: ShardWeights): void {
  for (const l of w.layers) {
    l.attentionNorm.destroy();
    destroyWeight(l.wqkv);
    l.bqkv?.destroy();
    l.bo?.destroy();
    destroyWeight(l.wo);
    l.ffnNorm.destroy();
    destroyWeight(l.w13);
    destroyWeight(l.w2);
  }
  destroyWeight(w.tokEmbeddings);
  w.norm.destroy();
  destroyWeight(w.output);
}

/** Activations and caches for steps of up to `maxM` rows, and the ops bound to them. */
export interface RunState {
  maxM: number;
  maxLogitRows: number;
  step: StepParams; // rows of this step: m, positions, slots
  headStep: StepParams; // rows whose logits are wanted
  tokens: GPUBuffer; // (maxM,) u32
  x: GPUBuffer; // (maxM, dim) the residual stream
  qkv: GPUBuffer; // (maxM, (heads/tp + 2·kvHeads/tp)·head_size)
  att: GPUBuffer; // (maxM, heads/tp·head_size)
  h13: GPUBuffer; // (maxM, 2·hidden/tp): w1·x and w3·x side by side
  partial: GPUBuffer; // (maxM, dim) a row-parallel partial sum
  /** Sync points read their partial sum from here: x on the rank that carries the residual. */
  syncFrom: GPUBuffer;
  xsel: GPUBuffer; // (maxLogitRows, dim) the rows whose logits are wanted
  logits: GPUBuffer; // (maxLogitRows, vocab/tp)
  scores?: GPUBuffer; // (maxM, heads/tp, context) runqExact's attention scores, shared by the layers
  kv: KvCache; // (layer) → (slot, kvHeads/tp, seq, head_size)
  rope: RopeTables; // (seq, head_size/2) cos and sin
  /** kv and rope belong to another state (this one is a second micro-batch). */
  shared: boolean;
  readback: Readback;
  ops: StepOps;
  workBytes: number;
}

/** The step as bound ops: `stages[i]` runs, then sync point i (if any) all-reduces `partial`. */
interface StepOps {
  embed: BoundOp;
  /** One list per stretch between sync points; at tp = 1 a single list holds every layer. */
  stages: BoundOp[][];
  /**
   * Exact sums: `links[i]` is sync point i's row-parallel matmul, kept out of `stages[i]` because
   * it runs only once the earlier ranks' sums have arrived (see `chainSync`).
   */
  chain?: { links: BoundOp[]; rank: number; world: number };
  head: BoundOp; // final norm + classifier over xsel
  /** `[head]`, so the head encodes like a stage without allocating per step. */
  headOps: BoundOp[];
}

export interface RunStateOptions {
  maxM: number;
  maxLogitRows: number;
  contextLength: number;
  slots: number;
  world: number;
  /** The KV cache and RoPE tables of another state on the same weights (a second micro-batch). */
  share?: RunState;
  /** Q8_0 weights: quantise each matmul's input to int8 per group first (W8A8, runq.c) or keep it f32. */
  activations?: Q8Activations;
  /**
   * W8A8 (int8 activations): runq.c's arithmetic bit for bit. Attention runs in run.c's order
   * (`attention_exact`), and at world > 1 each row-parallel matmul's groups are summed in
   * runq.c's order, rank after rank (each rank's matmul continues the sums the previous rank
   * passed on) instead of all-reducing the ranks' own partial sums: one round trip per rank.
   */
  runqExact?: boolean;
  /** The KV cache's values (default f32); f16 halves its bytes, attention still computes in f32. */
  kvCache?: KvCacheDtype;
}

export function createRunState(ctx: GpuContext, c: ModelConfig, r: RankPlan, w: ShardWeights, o: RunStateOptions): RunState {
  const d = rankDims(c, r);
  const { maxM } = o;
  const f32 = (n: number, label: string) => createStorageBuffer(ctx, n * 4, label);
  const step = createStepParams(ctx, maxM);
  const headStep = createStepParams(ctx, o.maxLogitRows);
  const s = {
    maxM,
    maxLogitRows: o.maxLogitRows,
    step,
    headStep,
    tokens: createStorageBuffer(ctx, maxM * 4, 'tokens'),
    x: f32(maxM * d.dim, 'x'),
    qkv: f32(maxM * d.qkv, 'qkv'),
    att: f32(maxM * d.nHeads * d.headSize, 'att'),
    h13: f32(maxM * 2 * d.hidden, 'h13'),
    partial: f32(maxM * d.dim, 'partial'),
    xsel: f32(o.maxLogitRows * d.dim, 'xsel'),
    logits: f32(o.maxLogitRows * d.vocab, 'logits'),
    scores: o.runqExact && o.activations === 'int8' ? f32(maxM * d.nHeads * o.contextLength, 'attention scores') : undefined,
    kv: o.share?.kv ?? createKvCache(ctx, { nLayers: c.nLayers, nKvHeadsLocal: d.nKvHeads, headSize: d.headSize, maxSeq: o.contextLength, nSlots: o.slots, dtype: o.kvCache }),
    rope: o.share?.rope ?? createRopeTables(ctx, d.headSize, ropeTables(c.headSize, o.contextLength, c.ropeTheta, c.ropeScaling)),
    shared: !!o.share,
    readback: createReadback(ctx, { slotBytes: Math.max(maxM * d.dim, o.maxLogitRows * d.vocab) * 4, slots: 2 }),
  };
  const eps = c.normEps;
  const tp1 = o.world === 1;
  // An uneven split may start a rank's heads inside a kv group (the shared kv head is on both ranks).
  const kvMul = c.nHeads / c.nKvHeads;
  const kvGroup = { kvMul, headOffset: r.heads[0] - r.kvHeads[0] * kvMul };
  const activations = o.activations ?? 'f32';
  const stages: BoundOp[][] = [[]];
  const current = () => stages[stages.length - 1]!;
  // Rank order is column order (the plan's ranges ascend with the rank), so the chain runs 0, 1, ….
  const exact = !!s.scores;
  const chain = !tp1 && exact;
  const links: BoundOp[] = [];
  const continueSum = chain && r.rank > 0;
  /** This rank's partial sums carry the residual stream (see Wo below). */
  const carry = !tp1 && !chain && r.rank === 0;
  /** The row-parallel matmuls accumulate into x: at tp = 1, and on the carrying rank. */
  const intoX = tp1 || carry;
  for (let l = 0; l < c.nLayers; l++) {
    const L = w.layers[l]!;
    // Attention: qkv = Wqkv·rmsnorm(x) (+ bqkv), rope q and k, k/v into the cache, attention over it.
    current().push(
      createMatmul(ctx, step, { activations, x: s.x, w: L.wqkv, y: s.qkv, bias: L.bqkv, maxM, input: { kind: 'rmsnorm', weight: L.attentionNorm, eps } }),
      createRopeKv(ctx, step, { qkv: s.qkv, rowStride: d.qkv, nHeads: d.nHeads, cache: s.kv, layer: l, tables: s.rope, style: c.ropeStyle, maxM }),
      createAttention(ctx, step, { q: s.qkv, qStride: d.qkv, nHeads: d.nHeads, cache: s.kv, layer: l, out: s.att, maxM, kvGroup, ...(exact && { kind: 'exact' as const, scores: s.scores }) }),
    );
    // x += Wo·att (+ bo): row-parallel, so a partial sum to all-reduce unless tp = 1. Rank 0's
    // partial carries the residual and the bias (Megatron adds a row-parallel bias on one rank):
    // it accumulates into x itself, so the all-reduced sum is the new x and lands there with no
    // add pass. Only the exact chain keeps sums apart from x (`chainSync` passes them on).
    const wo = { activations, x: s.att, w: L.wo, maxM };
    if (chain) {
      links.push(createMatmul(ctx, step, { ...wo, y: s.partial, continueSum }));
      const bias = L.bo ? [createAdd(ctx, step, { x: { buffer: L.bo, stride: 0 }, y: { buffer: s.partial }, n: d.dim, maxM })] : [];
      stages.push([...bias, createAdd(ctx, step, { x: { buffer: s.partial }, y: { buffer: s.x }, n: d.dim, maxM })]);
    } else {
      current().push(createMatmul(ctx, step, intoX ? { ...wo, y: s.x, bias: L.bo, accumulate: true } : { ...wo, y: s.partial }));
      if (!tp1) stages.push([]);
    }
    // MLP: h13 = W13·rmsnorm(x); x += W2·(silu(h1)·h3), row-parallel again.
    current().push(createMatmul(ctx, step, { activations, x: s.x, w: L.w13, y: s.h13, maxM, input: { kind: 'rmsnorm', weight: L.ffnNorm, eps } }));
    const down = { x: s.h13, xStride: 2 * d.hidden, w: L.w2, maxM, input: { kind: 'siluMul' as const, b: s.h13, bStride: 2 * d.hidden, bOffset: d.hidden } };
    if (chain) {
      links.push(createMatmul(ctx, step, { activations, ...down, y: s.partial, continueSum }));
      stages.push([createAdd(ctx, step, { x: { buffer: s.partial }, y: { buffer: s.x }, n: d.dim, maxM })]);
    } else {
      current().push(createMatmul(ctx, step, intoX ? { activations, ...down, y: s.x, accumulate: true } : { activations, ...down, y: s.partial }));
      if (!tp1) stages.push([]);
    }
  }
  const head = createMatmul(ctx, headStep, { activations, x: s.xsel, w: w.output, y: s.logits, maxM: o.maxLogitRows, input: { kind: 'rmsnorm', weight: w.norm, eps } });
  const ops: StepOps = {
    embed: createEmbedding(ctx, step, { table: w.tokEmbeddings, tokens: s.tokens, y: s.x, maxM }),
    stages,
    ...(chain && { chain: { links, rank: r.rank, world: o.world } }),
    head,
    headOps: [head],
  };
  const workBytes =
    4 * (maxM * (2 * d.dim + d.qkv + d.nHeads * d.headSize + 2 * d.hidden + 1) + o.maxLogitRows * (d.dim + d.vocab)) +
    (s.scores ? s.scores.size : 0) +
    (o.share ? 0 : 2 * c.nLayers * kvLayerBytes(s.kv) + o.contextLength * d.headSize * 4);
  return { ...s, ops, workBytes, syncFrom: carry ? s.x : s.partial };
}

export function destroyRunState(s: RunState, ctx: GpuContext): void {
  for (const op of [s.ops.embed, s.ops.head, ...s.ops.stages.flat(), ...(s.ops.chain?.links ?? [])]) op.destroy();
  for (const b of [s.tokens, s.x, s.qkv, s.att, s.h13, s.partial, s.xsel, s.logits]) b.destroy();
  s.scores?.destroy();
  destroyStepParams(s.step);
  destroyStepParams(s.headStep);
  if (!s.shared) {
    destroyKvCache(s.kv);
    destroyRopeTables(s.rope);
  }
  destroyReadback(ctx, s.readback);
}

/** Where time goes in a step, accumulated (ms). */
export interface StepTimes {
  compute: number;
  readback: number;
  allreduce: number;
  upload: number;
  /** Each sync point's readback start → upload done (ms), for the round-trip median. */
  roundtrips: number[];
}

/**
 * Sync-point reads whose stage is learnt to take at least this long (ms) are not poked (see
 * `ReadOptions.quietOverMs`). stories110M at batch 8 runs ~40 ms stages here: unpoked, TP2/TP1
 * was 0.93 (median of 12 interleaved rounds) against 0.865 poked (12 rounds), on a machine
 * whose round-to-round noise is ±10%, so suggestive rather than settled. Batch 1 (~20 ms
 * stages, where unpoked reads showed no gain) and stories15M stay under it and keep their pokes.
 */
export const QUIET_SYNC_MS = 30;

/** A sync point in flight: the partial sum's copy to the CPU is submitted. */
interface PendingSync {
  ticket: ReadTicket;
  n: number;
  t0: number;
}

/** Submits `encoder` (which computed the partial sum) with a copy of its m rows for the CPU. */
function submitPartial(ctx: GpuContext, s: RunState, encoder: GPUCommandEncoder, m: number, dim: number): PendingSync {
  const n = m * dim;
  const ticket = s.readback.encodeCopy(encoder, s.syncFrom, 0, n * 4);
  const t0 = performance.now();
  ctx.device.queue.submit([encoder.finish()]);
  return { ticket, n, t0 };
}

/** Reads the partial sum back into the slot, all-reduces it and uploads the sum (the new x). */
async function finishSync(ctx: GpuContext, s: RunState, p: PendingSync, m: number, red: Communicator, times: StepTimes): Promise<void> {
  await s.readback.read(p.ticket, { into: red.slot(p.n), key: `sync:${m}`, quietOverMs: QUIET_SYNC_MS });
  const t1 = performance.now();
  const sum = await red.allReduce(p.n);
  const t2 = performance.now();
  // The sum is the new x: rank 0's partial carried the residual (never the exact chain's path).
  ctx.device.queue.writeBuffer(s.x, 0, sum.buffer, sum.byteOffset, p.n * 4);
  const t3 = performance.now();
  times.readback += t1 - p.t0;
  times.allreduce += t2 - t1;
  times.upload += t3 - t2;
  if (times.roundtrips.length < 4096) times.roundtrips.push(t3 - p.t0);
}

/**
 * Sync point of the exact sums: the row-parallel matmul runs on one rank after another, each
 * continuing the per-row sums of the ranks before it (their columns come first), and the last
 * rank's sums, runq.c's to the bit, go to every rank. Ranks after the first submit their stage
 * first, so only the matmuls and round trips are serial: world of them instead of one.
 */
async function chainSync(
  ctx: GpuContext, s: RunState, encoder: GPUCommandEncoder, link: BoundOp, m: number, dim: number, red: Communicator, rank: number, world: number,
  times: StepTimes, prof?: KernelProfiler,
): Promise<void> {
  const n = m * dim;
  const t0 = performance.now();
  let waited = 0;
  let uploaded = 0;
  const upload = (v: Float32Array) => {
    const u = performance.now();
    ctx.device.queue.writeBuffer(s.partial, 0, v.buffer, v.byteOffset, n * 4);
    uploaded += performance.now() - u;
  };
  const receive = async (root: number) => {
    const w = performance.now();
    const v = await red.broadcast(n, root);
    waited += performance.now() - w;
    return v;
  };
  if (rank > 0) {
    ctx.device.queue.submit([encoder.finish()]);
    let before!: Float32Array;
    for (let r = 0; r < rank; r++) before = await receive(r);
    upload(before);
    encoder = ctx.device.createCommandEncoder();
  }
  encodeOps(encoder, [link], m, undefined, prof);
  const ticket = s.readback.encodeCopy(encoder, s.partial, 0, n * 4);
  ctx.device.queue.submit([encoder.finish()]);
  const r0 = performance.now();
  await s.readback.read(ticket, { into: red.slot(n), key: `chain:${m}`, quietOverMs: QUIET_SYNC_MS });
  times.readback += performance.now() - r0;
  await receive(rank);
  // The last rank's partial already holds the full sums.
  let sum: Float32Array | undefined;
  for (let r = rank + 1; r < world; r++) sum = await receive(r);
  if (sum) upload(sum);
  times.allreduce += waited;
  times.upload += uploaded;
  if (times.roundtrips.length < 4096) times.roundtrips.push(performance.now() - t0);
}

/** Writes a step's rows (a range of the posted ones) into a state's step block and token buffer. */
function writeRows(ctx: GpuContext, s: RunState, input: StepInput, r0: number, m: number): void {
  s.step.write(m, input.positions.subarray(r0, r0 + m), input.slots.subarray(r0, r0 + m));
  ctx.device.queue.writeBuffer(s.tokens, 0, input.tokens.buffer, input.tokens.byteOffset + r0 * 4, m * 4);
}

/**
 * One step for this rank: embed → per layer [attention → Wo → all-reduce → residual, MLP → W2 →
 * all-reduce → residual] → final norm and its vocabulary slice of the classifier. Returns this
 * rank's logits rows into `into`, which is exactly (logitRows.length, vocab/tp).
 */
export async function forward(
  ctx: GpuContext, s: RunState, dim: number, input: StepInput, red: Communicator, times: StepTimes, into: Float32Array, prof?: KernelProfiler,
): Promise<void> {
  const { device } = ctx;
  const { m } = input;
  writeRows(ctx, s, input, 0, m);
  const nl = input.logitRows.length;
  if (nl > 0) s.headStep.write(nl, new Uint32Array(nl));
  prof?.begin();

  let encoder = device.createCommandEncoder();
  const stages = s.ops.stages;
  for (let i = 0; i < stages.length; i++) {
    encodeOps(encoder, stages[i]!, m, i === 0 ? s.ops.embed : undefined, prof);
    if (i === stages.length - 1) break;
    // Sync point i: the partial sum of a row-parallel matmul is combined across ranks.
    const chain = s.ops.chain;
    if (chain) await chainSync(ctx, s, encoder, chain.links[i]!, m, dim, red, chain.rank, chain.world, times, prof);
    else await finishSync(ctx, s, submitPartial(ctx, s, encoder, m, dim), m, red, times);
    encoder = device.createCommandEncoder();
  }
  await finishHead(ctx, s, encoder, dim, input.logitRows, 0, nl, into, m, prof);
}

/**
 * The same step as two micro-batches (rows [0, a) and [a, m), a = ⌈m/2⌉) on two states that
 * share the weights and the KV cache: while one half's partial sum makes its round trip through
 * the CPU and the all-reduce, the device computes the other half's stage. Every rank splits and
 * interleaves alike (A's sync i, then B's), so the collectives pair up. Rows of one sequence may
 * straddle the halves: A's stage i (its KV writes included) is queued before B's stage i.
 */
export async function forwardOverlapped(
  ctx: GpuContext, A: RunState, B: RunState, dim: number, input: StepInput, red: Communicator, times: StepTimes, into: Float32Array,
): Promise<void> {
  const { device } = ctx;
  const { m } = input;
  if (A.ops.chain) throw new InvalidArgumentError('two-batch overlap cannot run the exact (chained) sums');
  const a = Math.ceil(m / 2);
  // logitRows is increasing (the scheduler lists rows in order), so A's come first.
  let la = 0;
  while (la < input.logitRows.length && input.logitRows[la]! < a) la++;
  const half = [
    { s: A, r0: 0, m: a, l0: 0, nl: la },
    { s: B, r0: a, m: m - a, l0: la, nl: input.logitRows.length - la },
  ];
  const stages = A.ops.stages.length;
  const enc: GPUCommandEncoder[] = [];
  const pending: PendingSync[] = [];
  for (let h = 0; h < 2; h++) {
    const x = half[h]!;
    writeRows(ctx, x.s, input, x.r0, x.m);
    if (x.nl > 0) x.s.headStep.write(x.nl, new Uint32Array(x.nl));
    enc[h] = device.createCommandEncoder();
    encodeOps(enc[h]!, x.s.ops.stages[0]!, x.m, x.s.ops.embed);
    if (stages > 1) pending[h] = submitPartial(ctx, x.s, enc[h]!, x.m, dim);
  }
  for (let i = 0; i + 1 < stages; i++) {
    for (let h = 0; h < 2; h++) {
      const x = half[h]!;
      await finishSync(ctx, x.s, pending[h]!, x.m, red, times);
      enc[h] = device.createCommandEncoder();
      encodeOps(enc[h]!, x.s.ops.stages[i + 1]!, x.m);
      if (i + 2 < stages) pending[h] = submitPartial(ctx, x.s, enc[h]!, x.m, dim);
    }
  }
  const heads: Promise<void>[] = [];
  for (let h = 0; h < 2; h++) {
    const x = half[h]!;
    heads.push(finishHead(ctx, x.s, enc[h]!, dim, input.logitRows, x.l0, x.nl, into, x.m, undefined, x.r0));
  }
  await Promise.all(heads);
}

/**
 * The last stage's command buffer: copy the rows whose logits are wanted (the last prompt row in
 * prefill) into xsel, run the head on them, read this rank's logits into `into` (rows l0.. of it).
 */
async function finishHead(
  ctx: GpuContext, s: RunState, encoder: GPUCommandEncoder, dim: number, logitRows: Int32Array, l0: number, nl: number,
  into: Float32Array, m: number, prof?: KernelProfiler, r0 = 0,
): Promise<void> {
  for (let j = 0; j < nl; j++) {
    encoder.copyBufferToBuffer(s.x, (logitRows[l0 + j]! - r0) * dim * 4, s.xsel, j * dim * 4, dim * 4);
  }
  if (nl === 0) {
    prof?.resolve(encoder);
    ctx.device.queue.submit([encoder.finish()]);
    await prof?.collect();
    return;
  }
  encodeOps(encoder, s.ops.headOps, nl, undefined, prof);
  const width = into.length / logitRows.length;
  const ticket = s.readback.encodeCopy(encoder, s.logits, 0, nl * width * 4);
  prof?.resolve(encoder);
  ctx.device.queue.submit([encoder.finish()]);
  await s.readback.read(ticket, { into: into.subarray(l0 * width, (l0 + nl) * width), key: `head:${m}` });
  await prof?.collect();
}

/** One pass per stage; profiling gives each op a timestamped pass of its own instead. */
function encodeOps(encoder: GPUCommandEncoder, ops: BoundOp[], rows: number, first?: BoundOp, prof?: KernelProfiler): void {
  if (prof) {
    if (first) encodeOne(prof, encoder, first, rows);
    for (const op of ops) encodeOne(prof, encoder, op, rows);
    return;
  }
  // The stage after the last sync point is empty (rank 0's sums carried the residual).
  if (!first && ops.length === 0) return;
  const pass = encoder.beginComputePass();
  first?.encode(pass, rows);
  for (const op of ops) op.encode(pass, rows);
  pass.end();
}

function encodeOne(prof: KernelProfiler, encoder: GPUCommandEncoder, op: BoundOp, rows: number): void {
  const pass = prof.pass(encoder, op.name);
  op.encode(pass, rows);
  pass.end();
}

/** Passes a profiled step of this state encodes at most (one per op). */
export function opCount(s: RunState): number {
  return 2 + s.ops.stages.reduce((n, st) => n + st.length, 0) + (s.ops.chain?.links.length ?? 0);
}
