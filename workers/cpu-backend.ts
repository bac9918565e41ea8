/**
 * The CPU backend of a rank: the forward's ops on the WebAssembly SIMD kernels (src/cpu), with
 * the shard, the activations and the KV cache in the rank's one `WebAssembly.Memory`. Every op
 * is a closure bound when the state is made; `run` computes it at once, so a stage has nothing
 * to submit, and `read`/`write` copy between the activations and the caller's floats.
 * Weights are f32, f16, or GGUF Q8_0/Q4_0/q8_m (workers/cpu-quant.ts; with f32 or int8 activations),
 * the KV cache f32 or f16; runq.c's exact attention is not here yet.
 */
import type { ModelConfig } from '../src/model/config.js';
import { checkRowSplit, rankDims, type RankPlan } from '../src/parallel/plan.js';
import { ropeTables } from '../src/model/reference.js';
import { CpuKernels, type CpuKernelsOptions, type CpuKvDtype } from '../src/cpu/kernels.js';
import { qkNorm } from '../src/cpu/qk-norm.js';
import { CpuQuantKernels } from '../src/cpu/quant.js';
import { matmulFor } from '../src/cpu/gemm.js';
import { panelMatrix } from './cpu-panel.js';
import { InvalidArgumentError } from '../src/errors.js';
import type { Activation, Backend, LayerOps, RankState, RowOp, StateOptions } from './backend.js';
import { commonForm, shardViews } from './slice-views.js';
import { cpuEmbed, cpuMatmul, quantMatrix, type CpuMatrix } from './cpu-quant.js';
import { kquantMatrix } from './cpu-kquant.js';

/** The weights of one rank, in its memory; shapes carry the shard, as in gpu-weights.ts. */
export interface CpuWeights {
  kernels: CpuKernels;
  quant: CpuQuantKernels;
  tokEmbeddings: CpuMatrix; // (vocab, dim), replicated
  layers: {
    attentionNorm: number; // (dim,) f32
    wqkv: CpuMatrix; // ((heads/tp + 2·kvHeads/tp)·head_size, dim): wq rows, then wk, then wv
    bqkv?: number; // ((heads/tp + 2·kvHeads/tp)·head_size,) f32
    qkNorm?: number; // (2·head_size,) f32, replicated: q_norm, then k_norm (Qwen3)
    wo: CpuMatrix; // (dim, heads/tp·head_size)
    bo?: number; // (dim,) f32, replicated
    ffnNorm: number; // (dim,) f32
    w13: CpuMatrix; // (2·hidden/tp, dim): w1 rows, then w3 rows
    w2: CpuMatrix; // (dim, hidden/tp)
  }[];
  norm: number; // (dim,) f32
  output: CpuMatrix; // (vocab/tp, dim)
}

/** Copies a rank's packed shard into a fresh memory, fusing wq|wk|wv and w1|w3 as the GPU backend does. */
function createCpuWeights(c: ModelConfig, r: RankPlan, packed: ArrayBuffer, o: CpuKernelsOptions): CpuWeights {
  const { view, f32 } = shardViews(r, packed);
  // The tiled and panel matrices' padding (≤ 3 rows each) and the state come on top.
  const kernels = CpuKernels.create(r.byteLength + (1 << 20), o);
  const quant = CpuQuantKernels.create(kernels);
  const vector = (name: string): number => kernels.put(f32(name));
  /** The named parts' rows one after another (k = cols), in `layout` (f32 and f16 ones asked tiled go in panels). */
  const matrix = (names: string[], cols: number, layout: 'rows' | 'tiled' = 'tiled'): CpuMatrix => {
    const parts = commonForm(names.map(view));
    const dtype = parts[0]!.dtype;
    if (dtype === 'q8_m') return kquantMatrix(kernels, names.map(view), cols, layout, `rank ${r.rank}: ${names[0]}`);
    if (dtype !== 'f32' && dtype !== 'f16') return quantMatrix(quant, kernels, parts, cols, layout, `rank ${r.rank}: ${names[0]}`);
    const values = parts.map((p) => (p.dtype === 'f32' ? p.f : p.dtype === 'f16' ? p.h : undefined)!);
    const rows = values.reduce((n, v) => n + v.length, 0) / cols;
    if (layout === 'tiled') return panelMatrix(kernels, values, rows, cols);
    const at = kernels.alloc(values.reduce((n, v) => n + v.byteLength, 0));
    let o = at;
    for (const v of values) {
      new Uint8Array(kernels.memory.buffer, o, v.byteLength).set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
      o += v.byteLength;
    }
    return { at, dtype, layout };
  };
  const fusedBias = (names: string[]): number => {
    const parts = names.map(f32);
    const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) {
      out.set(p, o);
      o += p.length;
    }
    return kernels.put(out);
  };
  const d = rankDims(c, r);
  const layers = Array.from({ length: c.nLayers }, (_, l) => {
    const p = `layers.${l}.`;
    return {
      attentionNorm: vector(`${p}attention_norm`),
      wqkv: matrix([`${p}attention.wq`, `${p}attention.wk`, `${p}attention.wv`], c.dim),
      ...(c.qkvBias ? { bqkv: fusedBias([`${p}attention.bq`, `${p}attention.bk`, `${p}attention.bv`]) } : {}),
      ...(c.qkNorm ? { qkNorm: fusedBias([`${p}attention.q_norm`, `${p}attention.k_norm`]) } : {}),
      wo: matrix([`${p}attention.wo`], d.nHeads * d.headSize),
      ...(c.outBias ? { bo: vector(`${p}attention.bo`) } : {}),
      ffnNorm: vector(`${p}ffn_norm`),
      w13: matrix([`${p}feed_forward.w1`, `${p}feed_forward.w3`], c.dim),
      w2: matrix([`${p}feed_forward.w2`], d.hidden),
    };
  });
  // The embedding is read a row per token, so it stays in rows.
  return { kernels, quant, tokEmbeddings: matrix(['tok_embeddings'], c.dim, 'rows'), layers, norm: vector('norm'), output: matrix(['output'], c.dim) };
}

/** One bound op: it computes the step's first m rows. */
export type CpuOp = (m: number) => void;

/** A step's activations (byte offsets in the rank's memory) and the ops bound to them. */
export interface CpuRunState extends RankState<CpuOp> {
  kernels: CpuKernels;
  /** The memory's allocation mark before this state: destroyState releases back to it. */
  mark: number;
  maxM: number;
  maxLogitRows: number;
  vocab: number;
  kvCache: CpuKvDtype;
  tokens: number; // (maxM,) i32
  positions: number; // (maxM,) i32
  slots: number; // (maxM,) i32
  x: number; // (maxM, dim) the residual stream
  partial: number; // (maxM, dim) a row-parallel partial sum
  xsel: number; // (maxLogitRows, dim) the rows whose logits are wanted
  logits: number; // (maxLogitRows, vocab/tp)
  head: CpuOp; // final norm + classifier over xsel
  m: number;
}

function createCpuRunState(c: ModelConfig, r: RankPlan, w: CpuWeights, o: StateOptions): CpuRunState {
  if (o.exact) throw new InvalidArgumentError('CPU ranks do not run runq.c\'s exact attention yet');
  const kn = w.kernels;
  const mark = kn.mark();
  const d = rankDims(c, r);
  const { maxM, contextLength: seq } = o;
  const hs = d.headSize;
  const qDim = d.nHeads * hs;
  const kvDim = d.nKvHeads * hs;
  const f32 = (n: number) => kn.alloc(n * 4);
  const tables = ropeTables(c.headSize, seq, c.ropeTheta, c.ropeScaling);
  const maxK = Math.max(d.dim, qDim, d.hidden);
  // Prefill chunks and batches of many rows take the GEMM on f32/f16 weights (its scratch is this state's).
  const matrices = [w.tokEmbeddings, w.output, ...w.layers.flatMap((l) => [l.wqkv, l.wo, l.w13, l.w2])];
  const mm = cpuMatmul(kn, w.quant, o.activations, maxM, maxK, matmulFor(kn, maxK), new Set(matrices.map((m) => m.dtype)));
  const b = {
    tokens: f32(maxM), positions: f32(maxM), slots: f32(maxM),
    x: f32(maxM * d.dim), xn: f32(maxM * d.dim), partial: f32(maxM * d.dim),
    qkv: f32(maxM * d.qkv), att: f32(maxM * qDim), h13: f32(maxM * 2 * d.hidden), hb: f32(maxM * d.hidden),
    xsel: f32(o.maxLogitRows * d.dim), logits: f32(o.maxLogitRows * d.vocab),
    cos: f32(tables.cos.length), sin: f32(tables.sin.length),
  };
  const kvDtype = o.kvCache;
  const cacheBytes = o.slots * d.nKvHeads * seq * hs * (kvDtype === 'f16' ? 2 : 4);
  const caches = w.layers.map(() => ({ k: kn.alloc(cacheBytes), v: kn.alloc(cacheBytes) }));
  kn.f32(b.cos, tables.cos.length).set(tables.cos);
  kn.f32(b.sin, tables.sin.length).set(tables.sin);
  const eps = c.normEps;
  const { rows } = o;
  /** A row-parallel matmul of `input(m)`'s result: bound as the rank's RowBinding says. */
  const rowParallel = (name: string, wt: CpuMatrix, x: number, k: number, bias: number | undefined, input: CpuOp): RowOp<CpuOp> => {
    checkRowSplit(r, name);
    const into = rows.into === 'x'
      ? { y: b.x, accumulate: true, bias }
      : { y: b.partial, accumulate: rows.continueSum, bias: undefined };
    const matmul: CpuOp = (m) => {
      input(m);
      mm({ ...into, x, w: wt, m, k, n: d.dim });
    };
    // A sum that lands in partial is added into x (with the bias, which every rank adds to the same sum).
    const addSum: CpuOp[] = rows.sumIn === 'x' ? [] : [
      ...(bias !== undefined ? [(m: number) => {
        for (let i = 0; i < m; i++) kn.add(b.partial + i * d.dim * 4, bias, d.dim);
      }] : []),
      (m: number) => kn.add(b.x, b.partial, m * d.dim),
    ];
    return { matmul, addSum };
  };
  const none: CpuOp = () => {};
  const qkNormOps = (weight: number | undefined): CpuOp[] =>
    weight === undefined ? [] : [(m) => qkNorm(kn, { qkv: b.qkv, rowStride: d.qkv, nHeads: d.nHeads, nKv: d.nKvHeads, headSize: hs, weight, eps, m })];
  const layers: LayerOps<CpuOp>[] = w.layers.map((L, l) => ({
    qkv: (m) => {
      kn.rmsnorm(b.xn, b.x, L.attentionNorm, m, d.dim, eps);
      mm({ y: b.qkv, x: b.xn, w: L.wqkv, m, k: d.dim, n: d.qkv, bias: L.bqkv });
    },
    qkNorm: qkNormOps(L.qkNorm),
    rope: (m) => {
      kn.rope(b.qkv, d.qkv, d.nHeads, hs, b.cos, b.sin, b.positions, m, c.ropeStyle);
      kn.rope(b.qkv + qDim * 4, d.qkv, d.nKvHeads, hs, b.cos, b.sin, b.positions, m, c.ropeStyle);
      kn.kvWrite(b.qkv + qDim * 4, d.qkv, d.nKvHeads, hs, b.positions, b.slots, m, caches[l]!.k, seq, kvDtype);
      kn.kvWrite(b.qkv + (qDim + kvDim) * 4, d.qkv, d.nKvHeads, hs, b.positions, b.slots, m, caches[l]!.v, seq, kvDtype);
    },
    attention: (m) => kn.attention({
      out: b.att, q: b.qkv, qStride: d.qkv, k: caches[l]!.k, v: caches[l]!.v, maxSeq: seq, nKv: d.nKvHeads,
      positions: b.positions, slots: b.slots, m, nHeads: d.nHeads, headSize: hs, kvMul: d.kvMul, headOffset: d.headOffset, kvDtype,
    }),
    wo: rowParallel(`layers.${l}.attention.wo`, L.wo, b.att, qDim, L.bo, none),
    w13: (m) => {
      kn.rmsnorm(b.xn, b.x, L.ffnNorm, m, d.dim, eps);
      mm({ y: b.h13, x: b.xn, w: L.w13, m, k: d.dim, n: 2 * d.hidden });
    },
    w2: rowParallel(`layers.${l}.feed_forward.w2`, L.w2, b.hb, d.hidden, undefined,
      (m) => kn.siluMul(b.hb, b.h13, b.h13 + d.hidden * 4, d.hidden, m, 2 * d.hidden)),
  }));
  const embed: CpuOp = (m) => cpuEmbed(kn, w.quant, w.tokEmbeddings, b.x, b.tokens, m, d.dim);
  const head: CpuOp = (m) => {
    kn.rmsnorm(b.xsel, b.xsel, w.norm, m, d.dim, eps);
    mm({ y: b.logits, x: b.xsel, w: w.output, m, k: d.dim, n: d.vocab });
  };
  return {
    kernels: kn, mark, dim: d.dim, maxM, maxLogitRows: o.maxLogitRows, vocab: d.vocab, kvCache: kvDtype,
    tokens: b.tokens, positions: b.positions, slots: b.slots, x: b.x, partial: b.partial, xsel: b.xsel, logits: b.logits,
    embed, layers, head, m: 0,
  };
}

export type CpuBackend = Backend<CpuWeights, CpuRunState, CpuOp>;

/** The activation `a` of state s as floats (a fresh view: the memory may have grown). */
function floats(s: CpuRunState, a: Activation, n: number): Float32Array {
  return s.kernels.f32(s[a], n);
}

/** The CPU backend; `o.variant` picks the kernels' build (default: relaxed SIMD where the engine has it). */
export function createCpuBackend(o: CpuKernelsOptions = {}): CpuBackend {
  return {
    createWeights: (c, r, packed) => createCpuWeights(c, r, packed, o),
    // The memory goes with its last reference.
    destroyWeights: () => {},
    createState: createCpuRunState,
    destroyState: (s) => s.kernels.release(s.mark),

    begin(s, input) {
      const { m } = input;
      if (m > s.maxM) throw new InvalidArgumentError(`a step of ${m} rows exceeds the state's ${s.maxM}`);
      s.m = m;
      const kn = s.kernels;
      kn.i32(s.tokens, m).set(input.tokens.subarray(0, m));
      kn.i32(s.positions, m).set(input.positions.subarray(0, m));
      kn.i32(s.slots, m).set(input.slots.subarray(0, m));
    },
    run: (s, op) => op(s.m),
    // Every op has run by the time `run` returns.
    submit: () => {},
    async read(s, from, into) {
      into.set(floats(s, from, into.length));
    },
    write(s, to, v) {
      floats(s, to, v.length).set(v);
    },
    /** Copies the wanted rows into xsel, runs the head on them and copies the logits out. */
    async head(s, logitRows, into) {
      const nl = logitRows.length;
      if (nl === 0) return;
      if (nl > s.maxLogitRows) throw new InvalidArgumentError(`${nl} logit rows exceed the state's ${s.maxLogitRows}`);
      const x = floats(s, 'x', s.m * s.dim);
      const xsel = s.kernels.f32(s.xsel, nl * s.dim);
      for (let j = 0; j < nl; j++) xsel.set(x.subarray(logitRows[j]! * s.dim, (logitRows[j]! + 1) * s.dim), j * s.dim);
      s.head(nl);
      into.set(s.kernels.f32(s.logits, nl * s.vocab));
    },
  };
}
