/**
 * One rank's part of the model, the way run.c reads: the weights of its shard
 * (`ShardWeights`), the buffers of one step (`RunState`), and `forward`, which runs the
 * rank's part of every layer with the two all-reduces per layer in plain sight.
 *
 * Shapes carry the shard: with tp ranks, `heads/tp` means this rank's query heads (and so on).
 * Row-parallel outputs (wo, w2) are partial sums; `syncPartial` all-reduces them. At tp = 1
 * there is nothing to reduce, so those matmuls accumulate straight into the residual and the
 * whole step is one submit with one readback (Megatron's single-rank shortcut, at step level).
 */
import type { ModelConfig } from '../src/model/config.js';
import type { RankPlan } from '../src/parallel/plan.js';
import { ropeTables } from '../src/model/reference.js';
import type { GpuContext } from '../src/gpu/device.js';
import {
  createMatrix, destroyMatrix, createStorageBuffer, createStepParams, destroyStepParams, writeMatrixRows,
  type Matrix, type StepParams,
} from '../src/gpu/buffers.js';
import { createMatmul } from '../src/gpu/matmul.js';
import { createQuantMatrix, destroyQuantMatrix, isQuantMatrix, writeQuantRows, type QuantMatrix } from '../src/gpu/q8.js';
import { createEmbedQ8, type Q8Activations } from '../src/gpu/matmul-q8.js';
import { q8ScalesOffset } from '../src/parallel/plan.js';
import { createRopeTables, destroyRopeTables, createRopeKv, type RopeTables } from '../src/gpu/rope.js';
import { createKvCache, destroyKvCache, type KvCache } from '../src/gpu/kv-cache.js';
import { createAttention } from '../src/gpu/attention.js';
import { createAdd, createEmbed } from '../src/gpu/elementwise.js';
import { createReadback, destroyReadback, type Readback } from '../src/gpu/readback.js';
import type { BoundOp } from '../src/gpu/op.js';
import { ModelFormatError } from '../src/errors.js';

/** A weight matrix as the file stores it: f32, or Q8_0 kept quantised. */
export type Weight = Matrix | QuantMatrix;

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
  wo: Weight; // (dim, heads/tp·head_size): this rank's columns of wo
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

/** A slice of the packed shard: f32 values, or Q8_0 values and their group scales. */
type SliceView = { dtype: 'f32'; f: Float32Array } | { dtype: 'q8_0'; q: Int8Array; s: Float32Array; groupSize: number };

/**
 * Uploads a rank's packed shard (its slices, dense, one after the other in plan order) into
 * GPU buffers, fusing wq|wk|wv and w1|w3 into one matrix each so each is one matmul. Q8_0
 * slices stay quantised (values and scales, as the plan packs them).
 */
export function createShardWeights(ctx: GpuContext, c: ModelConfig, r: RankPlan, packed: ArrayBuffer): ShardWeights {
  const d = rankDims(c, r);
  const views = new Map<string, SliceView>();
  let offset = 0;
  for (const s of r.slices) {
    if (s.dtype === 'q8_0') {
      const n = s.shape[0] * s.shape[1];
      const g = s.groupSize!;
      views.set(s.name, { dtype: 'q8_0', q: new Int8Array(packed, offset, n), s: new Float32Array(packed, offset + q8ScalesOffset(n), n / g), groupSize: g });
    } else views.set(s.name, { dtype: 'f32', f: new Float32Array(packed, offset, s.byteLength / 4) });
    offset += s.byteLength;
  }
  if (offset !== packed.byteLength) throw new ModelFormatError(`rank ${r.rank}: shard is ${packed.byteLength} bytes, its plan says ${offset}`);
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
    const parts = names.map(view);
    const first = parts[0]!;
    if (first.dtype === 'q8_0') {
      const m = createQuantMatrix(ctx, rows, cols, first.groupSize, label);
      let row = 0;
      for (const [i, p] of parts.entries()) {
        if (p.dtype !== 'q8_0' || p.groupSize !== first.groupSize) throw new ModelFormatError(`${names[i]} must be stored like ${names[0]} to be fused with it`);
        writeQuantRows(ctx, m, row, p.q, p.s);
        row += p.q.length / cols;
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
  for (let l = 0; l < c.nLayers; l++) {
    const p = `layers.${l}.`;
    layers.push({
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
  else destroyMatrix(w);
}

export function destroyShardWeights(w: ShardWeights): void {
  for (const l of w.layers) {
    l.attentionNorm.destroy();
    destroyWeight(l.wqkv);
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
  partial: GPUBuffer; // (maxM, dim) a row-parallel partial sum, all-reduced in place
  xsel: GPUBuffer; // (maxLogitRows, dim) the rows whose logits are wanted
  logits: GPUBuffer; // (maxLogitRows, vocab/tp)
  kv: KvCache; // (layer) → (slot, kvHeads/tp, seq, head_size)
  rope: RopeTables; // (seq, head_size/2) cos and sin
  readback: Readback;
  ops: StepOps;
  workBytes: number;
}

/** The step as bound ops: `stages[i]` runs, then sync point i (if any) all-reduces `partial`. */
interface StepOps {
  embed: BoundOp;
  /** One list per stretch between sync points; at tp = 1 a single list holds every layer. */
  stages: BoundOp[][];
  head: BoundOp; // final norm + classifier over xsel
}

export interface RunStateOptions {
  maxM: number;
  maxLogitRows: number;
  contextLength: number;
  slots: number;
  world: number;
  /** Q8_0 weights: quantise each matmul's input to int8 per group first (W8A8, runq.c) or keep it f32. */
  activations?: Q8Activations;
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
    kv: createKvCache(ctx, { nLayers: c.nLayers, nKvHeadsLocal: d.nKvHeads, headSize: d.headSize, maxSeq: o.contextLength, nSlots: o.slots }),
    rope: createRopeTables(ctx, d.headSize, ropeTables(c.headSize, o.contextLength, c.ropeTheta)),
    readback: createReadback(ctx, { slotBytes: Math.max(maxM * d.dim, o.maxLogitRows * d.vocab) * 4, slots: 2 }),
  };
  const eps = c.normEps;
  const tp1 = o.world === 1;
  const activations = o.activations ?? 'f32';
  const stages: BoundOp[][] = [[]];
  const current = () => stages[stages.length - 1]!;
  for (let l = 0; l < c.nLayers; l++) {
    const L = w.layers[l]!;
    // Attention: qkv = Wqkv·rmsnorm(x), rope q and k, k/v into the cache, attention over it.
    current().push(
      createMatmul(ctx, step, { activations, x: s.x, w: L.wqkv, y: s.qkv, maxM, input: { kind: 'rmsnorm', weight: L.attentionNorm, eps } }),
      createRopeKv(ctx, step, { qkv: s.qkv, rowStride: d.qkv, nHeads: d.nHeads, cache: s.kv, layer: l, tables: s.rope, style: c.ropeStyle, maxM }),
      createAttention(ctx, step, { q: s.qkv, qStride: d.qkv, nHeads: d.nHeads, cache: s.kv, layer: l, out: s.att, maxM }),
    );
    // x += Wo·att: row-parallel, so a partial sum to all-reduce unless tp = 1.
    if (tp1) current().push(createMatmul(ctx, step, { activations, x: s.att, w: L.wo, y: s.x, accumulate: true, maxM }));
    else {
      current().push(createMatmul(ctx, step, { activations, x: s.att, w: L.wo, y: s.partial, maxM }));
      stages.push([createAdd(ctx, step, { x: { buffer: s.partial }, y: { buffer: s.x }, n: d.dim, maxM })]);
    }
    // MLP: h13 = W13·rmsnorm(x); x += W2·(silu(h1)·h3), row-parallel again.
    current().push(createMatmul(ctx, step, { activations, x: s.x, w: L.w13, y: s.h13, maxM, input: { kind: 'rmsnorm', weight: L.ffnNorm, eps } }));
    const down = { x: s.h13, xStride: 2 * d.hidden, w: L.w2, maxM, input: { kind: 'siluMul' as const, b: s.h13, bStride: 2 * d.hidden, bOffset: d.hidden } };
    if (tp1) current().push(createMatmul(ctx, step, { activations, ...down, y: s.x, accumulate: true }));
    else {
      current().push(createMatmul(ctx, step, { activations, ...down, y: s.partial }));
      stages.push([createAdd(ctx, step, { x: { buffer: s.partial }, y: { buffer: s.x }, n: d.dim, maxM })]);
    }
  }
  const ops: StepOps = {
    embed: isQuantMatrix(w.tokEmbeddings)
      ? createEmbedQ8(ctx, step, { table: w.tokEmbeddings, tokens: s.tokens, y: s.x, maxM })
      : createEmbed(ctx, step, { table: w.tokEmbeddings, tokens: s.tokens, y: s.x, maxM }),
    stages,
    head: createMatmul(ctx, headStep, { activations, x: s.xsel, w: w.output, y: s.logits, maxM: o.maxLogitRows, input: { kind: 'rmsnorm', weight: w.norm, eps } }),
  };
  const workBytes =
    4 * (maxM * (2 * d.dim + d.qkv + d.nHeads * d.headSize + 2 * d.hidden + 1) + o.maxLogitRows * (d.dim + d.vocab)) +
    2 * c.nLayers * o.slots * d.nKvHeads * o.contextLength * d.headSize * 4 +
    o.contextLength * d.headSize * 4;
  return { ...s, ops, workBytes };
}

export function destroyRunState(s: RunState, ctx: GpuContext): void {
  for (const op of [s.ops.embed, s.ops.head, ...s.ops.stages.flat()]) op.destroy();
  for (const b of [s.tokens, s.x, s.qkv, s.att, s.h13, s.partial, s.xsel, s.logits]) b.destroy();
  destroyStepParams(s.step);
  destroyStepParams(s.headStep);
  destroyKvCache(s.kv);
  destroyRopeTables(s.rope);
  destroyReadback(ctx, s.readback);
}

/** The rows of one step, as the scheduler posted them. */
export interface StepInput {
  m: number;
  tokens: Int32Array; // (m,)
  positions: Int32Array; // (m,)
  slots: Int32Array; // (m,)
  /** Rows (indices < m) whose logits are wanted, in order. */
  logitRows: Int32Array;
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

/** The all-reduce of `partial` (m·dim floats) at sync point `i`: read back, reduce, upload. */
export type SyncPartial = (i: number, encoder: GPUCommandEncoder, m: number) => Promise<void>;

/**
 * One step for this rank: embed → per layer [attention → Wo → all-reduce → residual, MLP → W2 →
 * all-reduce → residual] → final norm and its vocabulary slice of the classifier. Returns this
 * rank's logits rows into `into`, which is exactly (logitRows.length, vocab/tp).
 */
export async function forward(ctx: GpuContext, s: RunState, dim: number, input: StepInput, sync: SyncPartial, into: Float32Array): Promise<void> {
  const { device } = ctx;
  const { m } = input;
  s.step.write(m, input.positions, input.slots);
  device.queue.writeBuffer(s.tokens, 0, input.tokens.buffer, input.tokens.byteOffset, m * 4);
  const nl = input.logitRows.length;
  if (nl > 0) s.headStep.write(nl, new Uint32Array(nl));

  let encoder = device.createCommandEncoder();
  let pass = encoder.beginComputePass();
  s.ops.embed.encode(pass, m);
  const stages = s.ops.stages;
  for (let i = 0; i < stages.length; i++) {
    for (const op of stages[i]!) op.encode(pass, m);
    if (i === stages.length - 1) break;
    // Sync point i: the partial sum of a row-parallel matmul is combined across ranks.
    pass.end();
    await sync(i, encoder, m);
    encoder = device.createCommandEncoder();
    pass = encoder.beginComputePass();
  }
  pass.end();
  // The head runs only on the rows whose logits are wanted (the last prompt row in prefill).
  for (let j = 0; j < nl; j++) {
    encoder.copyBufferToBuffer(s.x, input.logitRows[j]! * dim * 4, s.xsel, j * dim * 4, dim * 4);
  }
  if (nl === 0) {
    device.queue.submit([encoder.finish()]);
    return;
  }
  pass = encoder.beginComputePass();
  s.ops.head.encode(pass, nl);
  pass.end();
  const ticket = s.readback.encodeCopy(encoder, s.logits, 0, into.byteLength);
  device.queue.submit([encoder.finish()]);
  await s.readback.read(ticket, { into, key: `head:${m}` });
}
