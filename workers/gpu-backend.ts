/**
 * The WebGPU backend of a rank (ARCHITECTURE.md decision 7): every op is bound once, when the
 * step state is made, and `run` only encodes it; a stage (the ops between two sync points)
 * is one compute pass in one submit, with one readback at its sync point; a step allocates no
 * GPU resource. Kernel choice and tuning stay in the kernel wrappers (`createMatmul`, ...).
 */
import type { ModelConfig } from '../src/model/config.js';
import { checkRowSplit, rankDims, type RankPlan } from '../src/parallel/plan.js';
import { mathTrig, ropeTables } from '../src/model/reference.js';
import { glibcTrig } from '../src/model/glibc-trig.js';
import type { GpuContext } from '../src/gpu/core/device.js';
import { createStorageBuffer, createStepParams, destroyStepParams, type StepParams } from '../src/gpu/core/buffers.js';
import { createMatmul, type MatmulOptions } from '../src/gpu/kernels/matmul.js';
import { createEmbedding } from '../src/gpu/kernels/embed.js';
import { createRopeTables, destroyRopeTables, createRopeKv, type RopeTables } from '../src/gpu/kernels/rope.js';
import { createKvCache, destroyKvCache, kvLayerBytes, type KvCache } from '../src/gpu/kernels/kv-cache.js';
import { createAttention } from '../src/gpu/kernels/attention.js';
import { createAdd } from '../src/gpu/kernels/elementwise.js';
import { createQkNorm } from '../src/gpu/kernels/qk-norm.js';
import { createReadback, destroyReadback, type Readback, type ReadTicket } from '../src/gpu/core/readback.js';
import type { BoundOp } from '../src/gpu/core/op.js';
import { createKernelProfiler, type KernelProfiler } from '../src/gpu/core/profiler.js';
import type { Backend, LayerOps, RankState, RowOp, StateOptions } from './backend.js';
import { createShardWeights, destroyShardWeights, type ShardWeights } from './gpu-weights.js';

/** Activations and caches for steps of up to `maxM` rows, the ops bound to them, and the stage being recorded. */
export interface RunState extends RankState<BoundOp> {
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
  xsel: GPUBuffer; // (maxLogitRows, dim) the rows whose logits are wanted
  logits: GPUBuffer; // (maxLogitRows, vocab/tp)
  scores?: GPUBuffer; // (maxM, heads/tp, context) exact attention's scores, shared by the layers
  kv: KvCache; // (layer) → (slot, kvHeads/tp, seq, head_size)
  rope: RopeTables; // (seq, head_size/2) cos and sin
  readback: Readback;
  head: BoundOp; // final norm + classifier over xsel
  /** Every op in its own timestamped pass (`StateOptions.profile`, where the adapter can). */
  profiler?: KernelProfiler;
  workBytes: number;
  /** The step's rows, and the stage being recorded: its encoder and open pass. */
  m: number;
  encoder?: GPUCommandEncoder;
  pass?: GPUComputePassEncoder;
}

/**
 * Sync-point reads whose stage is learnt to take at least this long (ms) are not poked (see
 * `ReadOptions.quietOverMs`): such a stage's time varies with the other ranks' load, and the
 * pokes cost more than the latency they save. Short stages keep their pokes.
 */
export const QUIET_SYNC_MS = 30;

function createRunState(ctx: GpuContext, c: ModelConfig, r: RankPlan, w: ShardWeights, o: StateOptions): RunState {
  const d = rankDims(c, r);
  const { maxM, activations, rows } = o;
  const f32 = (n: number, label: string) => createStorageBuffer(ctx, n * 4, label);
  const step = createStepParams(ctx, maxM);
  const headStep = createStepParams(ctx, o.maxLogitRows);
  const b = {
    tokens: createStorageBuffer(ctx, maxM * 4, 'tokens'),
    x: f32(maxM * d.dim, 'x'),
    qkv: f32(maxM * d.qkv, 'qkv'),
    att: f32(maxM * d.nHeads * d.headSize, 'att'),
    h13: f32(maxM * 2 * d.hidden, 'h13'),
    partial: f32(maxM * d.dim, 'partial'),
    xsel: f32(o.maxLogitRows * d.dim, 'xsel'),
    logits: f32(o.maxLogitRows * d.vocab, 'logits'),
    scores: o.exact ? f32(maxM * d.nHeads * o.contextLength, 'attention scores') : undefined,
    kv: createKvCache(ctx, { nLayers: c.nLayers, nKvHeadsLocal: d.nKvHeads, headSize: d.headSize, maxSeq: o.contextLength, nSlots: o.slots, dtype: o.kvCache }),
    rope: createRopeTables(ctx, d.headSize, ropeTables(c.headSize, o.contextLength, c.ropeTheta, c.ropeScaling, o.exact ? glibcTrig : mathTrig)),
  };
  const eps = c.normEps;
  const kvGroup = { kvMul: d.kvMul, headOffset: d.headOffset };
  /** A matmul whose weight the plan splits by rows leaves a partial sum: bound as the rank's RowBinding says. */
  const rowParallel = (name: string, mm: Omit<MatmulOptions, 'y'>, bias: GPUBuffer | undefined): RowOp<BoundOp> => {
    checkRowSplit(r, name);
    const matmul = rows.into === 'x'
      ? createMatmul(ctx, step, { ...mm, y: b.x, bias, accumulate: true })
      : createMatmul(ctx, step, { ...mm, y: b.partial, continueSum: rows.continueSum });
    // A sum that lands in partial is added into x (with the bias, which every rank adds to the same sum).
    const addSum = rows.sumIn === 'x' ? [] : [
      ...(bias ? [createAdd(ctx, step, { x: { buffer: bias, stride: 0 }, y: { buffer: b.partial }, n: d.dim, maxM })] : []),
      createAdd(ctx, step, { x: { buffer: b.partial }, y: { buffer: b.x }, n: d.dim, maxM }),
    ];
    return { matmul, addSum };
  };
  const layers: LayerOps<BoundOp>[] = w.layers.map((L, l) => ({
    qkv: createMatmul(ctx, step, { activations, x: b.x, w: L.wqkv, y: b.qkv, bias: L.bqkv, maxM, input: { kind: 'rmsnorm', weight: L.attentionNorm, eps } }),
    qkNorm: L.qkNorm ? [createQkNorm(ctx, step, { qkv: b.qkv, rowStride: d.qkv, nHeads: d.nHeads, nKv: d.nKvHeads, headSize: d.headSize, weight: L.qkNorm, eps, maxM })] : [],
    rope: createRopeKv(ctx, step, { qkv: b.qkv, rowStride: d.qkv, nHeads: d.nHeads, cache: b.kv, layer: l, tables: b.rope, style: c.ropeStyle, maxM }),
    attention: createAttention(ctx, step, {
      q: b.qkv, qStride: d.qkv, nHeads: d.nHeads, cache: b.kv, layer: l, out: b.att, maxM, kvGroup, ...(b.scores && { kind: 'exact' as const, scores: b.scores }),
    }),
    wo: rowParallel(`layers.${l}.attention.wo`, { activations, x: b.att, w: L.wo, maxM }, L.bo),
    w13: createMatmul(ctx, step, { activations, x: b.x, w: L.w13, y: b.h13, maxM, input: { kind: 'rmsnorm', weight: L.ffnNorm, eps } }),
    w2: rowParallel(`layers.${l}.feed_forward.w2`, {
      activations, x: b.h13, xStride: 2 * d.hidden, w: L.w2, maxM, input: { kind: 'siluMul', b: b.h13, bStride: 2 * d.hidden, bOffset: d.hidden },
    }, undefined),
  }));
  const embed = createEmbedding(ctx, step, { table: w.tokEmbeddings, tokens: b.tokens, y: b.x, maxM });
  const head = createMatmul(ctx, headStep, { activations, x: b.xsel, w: w.output, y: b.logits, maxM: o.maxLogitRows, input: { kind: 'rmsnorm', weight: w.norm, eps } });
  const opCount = 2 + layers.reduce((n, L) => n + 6 + L.qkNorm.length + L.wo.addSum.length + L.w2.addSum.length, 0);
  const workBytes =
    4 * (maxM * (2 * d.dim + d.qkv + d.nHeads * d.headSize + 2 * d.hidden + 1) + o.maxLogitRows * (d.dim + d.vocab)) +
    (b.scores ? b.scores.size : 0) + 2 * c.nLayers * kvLayerBytes(b.kv) + o.contextLength * d.headSize * 4;
  return {
    ...b, dim: d.dim, maxM, maxLogitRows: o.maxLogitRows, step, headStep, embed, layers, head, workBytes, m: 0,
    readback: createReadback(ctx, { slotBytes: Math.max(maxM * d.dim, o.maxLogitRows * d.vocab) * 4, slots: 2 }),
    profiler: o.profile ? createKernelProfiler(ctx, opCount) : undefined,
  };
}

function destroyRunState(ctx: GpuContext, s: RunState): void {
  const rowOps = (r: RowOp<BoundOp>) => [r.matmul, ...r.addSum];
  const ops = [s.embed, s.head, ...s.layers.flatMap((L) => [L.qkv, ...L.qkNorm, L.rope, L.attention, ...rowOps(L.wo), L.w13, ...rowOps(L.w2)])];
  for (const op of ops) op.destroy();
  for (const b of [s.tokens, s.x, s.qkv, s.att, s.h13, s.partial, s.xsel, s.logits]) b.destroy();
  s.scores?.destroy();
  destroyStepParams(s.step);
  destroyStepParams(s.headStep);
  destroyKvCache(s.kv);
  destroyRopeTables(s.rope);
  destroyReadback(ctx, s.readback);
  s.profiler?.destroy();
}

/** The stage's command encoder, begun at its first op. */
function encoderOf(ctx: GpuContext, s: RunState): GPUCommandEncoder {
  s.encoder ??= ctx.device.createCommandEncoder();
  return s.encoder;
}

/** Encodes one op for `rows` rows: into the stage's one pass, or, profiling, a timestamped pass of its own. */
function encodeOp(ctx: GpuContext, s: RunState, op: BoundOp, rows: number): void {
  const encoder = encoderOf(ctx, s);
  if (s.profiler) {
    const pass = s.profiler.pass(encoder, op.name);
    op.encode(pass, rows);
    pass.end();
    return;
  }
  s.pass ??= encoder.beginComputePass();
  op.encode(s.pass, rows);
}

function endPass(s: RunState): void {
  s.pass?.end();
  s.pass = undefined;
}

/** Ends the stage: its encoder, for the caller to submit. */
function endStage(ctx: GpuContext, s: RunState): GPUCommandEncoder {
  const encoder = encoderOf(ctx, s);
  endPass(s);
  s.encoder = undefined;
  return encoder;
}

export type GpuBackend = Backend<ShardWeights, RunState, BoundOp>;

export function createGpuBackend(ctx: GpuContext): GpuBackend {
  const { queue } = ctx.device;
  return {
    createWeights: (c, r, packed) => createShardWeights(ctx, c, r, packed),
    destroyWeights: destroyShardWeights,
    createState: (c, r, w, o) => createRunState(ctx, c, r, w, o),
    destroyState: (s) => destroyRunState(ctx, s),

    begin(s, input) {
      const { m } = input;
      s.m = m;
      // A failed step may have left a stage open: it is dropped, never submitted.
      s.pass = undefined;
      s.encoder = undefined;
      s.step.write(m, input.positions.subarray(0, m), input.slots.subarray(0, m));
      queue.writeBuffer(s.tokens, 0, input.tokens.buffer, input.tokens.byteOffset, m * 4);
      const nl = input.logitRows.length;
      if (nl > 0) s.headStep.write(nl, new Uint32Array(nl));
      s.profiler?.begin();
    },
    run: (s, op) => encodeOp(ctx, s, op, s.m),
    submit(s) {
      queue.submit([endStage(ctx, s).finish()]);
    },
    async read(s, from, into, key) {
      const encoder = endStage(ctx, s);
      const ticket = s.readback.encodeCopy(encoder, s[from], 0, into.length * 4);
      queue.submit([encoder.finish()]);
      await s.readback.read(ticket, { into, key: `${key}:${s.m}`, quietOverMs: QUIET_SYNC_MS });
    },
    write(s, to, v) {
      queue.writeBuffer(s[to], 0, v.buffer, v.byteOffset, v.length * 4);
    },
    /** Copies the wanted rows (the last prompt row in prefill) into xsel, runs the head on them and reads the logits. */
    async head(s, logitRows, into) {
      const nl = logitRows.length;
      const encoder = encoderOf(ctx, s);
      endPass(s);
      for (let j = 0; j < nl; j++) encoder.copyBufferToBuffer(s.x, logitRows[j]! * s.dim * 4, s.xsel, j * s.dim * 4, s.dim * 4);
      let ticket: ReadTicket | undefined;
      if (nl > 0) {
        encodeOp(ctx, s, s.head, nl);
        endPass(s);
        ticket = s.readback.encodeCopy(encoder, s.logits, 0, into.length * 4);
      }
      s.profiler?.resolve(encoder);
      queue.submit([endStage(ctx, s).finish()]);
      if (ticket) await s.readback.read(ticket, { into, key: `head:${s.m}` });
      await s.profiler?.collect();
    },
  };
}
