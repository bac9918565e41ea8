/**
 * The CPU backend for `runqExact`: runq.c's W8A8 forward float for float on a CPU rank. The
 * matmuls are w8a8.wat's (runq.c's group order, exact int8 dots); the rest follows runq.c step
 * by step in f32 (the oracle's rmsnorm, quantize and rope; attention in run.c's order; glibc's
 * expf and, in the RoPE tables, its cosf and sinf). At TP > 1 the row sums are chained rank to
 * rank (`continue`), so each is runq.c's one sequential sum over the groups.
 */
import type { ModelConfig } from '../src/model/config.js';
import { checkRowSplit, rankDims, type RankPlan } from '../src/parallel/plan.js';
import { add, rmsnorm, rope, ropeTables } from '../src/model/reference.js';
import { quantizeQ8, type Q8Tensor } from '../src/model/reference-q8.js';
import { glibcTrig } from '../src/model/glibc-trig.js';
import { expf } from '../src/model/glibc-expf.js';
import { int8s, W8A8Matmul, type W8A8Into, type W8A8Operand } from '../src/cpu/w8a8.js';
import { CpuKernels } from '../src/cpu/kernels.js';
import { InvalidArgumentError, ModelFormatError, PlanError } from '../src/errors.js';
import type { Activation, Backend, LayerOps, RankState, RowOp, StateOptions } from './backend.js';
import { shardViews, type SliceView } from './slice-views.js';

const f = Math.fround;

/** A rank's weights: W8A8 matrices in the kernels' memory (W[out][in]), norms and the embedding in JS. */
export interface ExactWeights {
  kernels: CpuKernels;
  w8a8: W8A8Matmul;
  groupSize: number;
  tokens: Q8Tensor; // (vocab, dim), replicated; rows are dequantised as runq.c's table is
  layers: {
    attentionNorm: Float32Array; // (dim,)
    wqkv: W8A8Operand; // ((heads/tp + 2·kvHeads/tp)·head_size, dim): wq rows, then wk, then wv
    wo: W8A8Operand; // (dim, heads/tp·head_size)
    ffnNorm: Float32Array; // (dim,)
    w13: W8A8Operand; // (2·hidden/tp, dim): w1 rows, then w3 rows
    w2: W8A8Operand; // (dim, hidden/tp)
  }[];
  norm: Float32Array; // (dim,)
  output: W8A8Operand; // (vocab/tp, dim)
}

function createExactWeights(c: ModelConfig, r: RankPlan, packed: ArrayBuffer): ExactWeights {
  const { view, f32 } = shardViews(r, packed);
  const q8 = (name: string): Extract<SliceView, { dtype: 'q8_0' }> => {
    const v = view(name);
    if (v.dtype !== 'q8_0') throw new ModelFormatError(`rank ${r.rank}: runqExact needs Q8_0 matrices (llama2.c version 2); ${name} is ${v.dtype}`);
    return v;
  };
  const vector = (name: string): Float32Array => f32(name).slice();
  const groupSize = q8('tok_embeddings').groupSize;
  const kernels = CpuKernels.create(r.byteLength + (1 << 16));
  /** The named matrices' rows one after another, values then scales. */
  const matrix = (names: string[]): W8A8Operand => {
    const parts = names.map(q8);
    for (const p of parts) if (p.groupSize !== groupSize) throw new ModelFormatError(`rank ${r.rank}: expected one group size ${groupSize}, got ${p.groupSize}`);
    const q = kernels.alloc(parts.reduce((n, p) => n + p.q.length, 0));
    let at = q;
    for (const p of parts) {
      int8s(kernels, at, p.q.length).set(p.q);
      at += p.q.length;
    }
    const s = kernels.alloc(parts.reduce((n, p) => n + p.s.byteLength, 0));
    at = s;
    for (const p of parts) {
      kernels.f32(at, p.s.length).set(p.s);
      at += p.s.byteLength;
    }
    return { q, s };
  };
  const layers = Array.from({ length: c.nLayers }, (_, l) => {
    const p = `layers.${l}.`;
    return {
      attentionNorm: vector(`${p}attention_norm`),
      wqkv: matrix([`${p}attention.wq`, `${p}attention.wk`, `${p}attention.wv`]),
      wo: matrix([`${p}attention.wo`]),
      ffnNorm: vector(`${p}ffn_norm`),
      w13: matrix([`${p}feed_forward.w1`, `${p}feed_forward.w3`]),
      w2: matrix([`${p}feed_forward.w2`]),
    };
  });
  const emb = q8('tok_embeddings');
  return { kernels, w8a8: W8A8Matmul.on(kernels), groupSize, tokens: { q: emb.q.slice(), s: emb.s.slice() }, layers, norm: vector('norm'), output: matrix(['output']) };
}

/** One bound op: it computes the step's first m rows. */
export type ExactOp = (m: number) => void;

/** A step's activations (views into the kernels' memory) and the ops bound to them. */
export interface ExactRunState extends RankState<ExactOp> {
  kernels: CpuKernels;
  /** The memory's allocation mark before this state: destroyState releases back to it. */
  mark: number;
  maxM: number;
  maxLogitRows: number;
  vocab: number;
  tokens: Int32Array; // (maxM,)
  positions: Int32Array; // (maxM,)
  slots: Int32Array; // (maxM,)
  acts: Record<Activation, Float32Array>; // x: (maxM, dim) the residual stream; partial: a row-parallel sum
  xsel: Float32Array; // (maxLogitRows, dim)
  logits: Float32Array; // (maxLogitRows, vocab/tp)
  head: ExactOp; // final norm + classifier over xsel
  /** The KV cache's bytes (it lives outside the kernels' memory). */
  cacheBytes: number;
  m: number;
}

function createExactState(c: ModelConfig, r: RankPlan, w: ExactWeights, o: StateOptions): ExactRunState {
  if (o.activations !== 'int8' || !o.exact) throw new InvalidArgumentError(`runq.c's exact CPU ranks run W8A8 with runqExact, got ${o.activations} activations${o.exact ? '' : ' without runqExact'}`);
  if (o.kvCache !== 'f32') throw new InvalidArgumentError(`runqExact keeps runq.c's f32 KV cache, got ${o.kvCache}`, "Leave kvCache at 'auto' (or 'f32')");
  if (c.qkvBias || c.outBias) throw new ModelFormatError('runqExact runs llama2.c version 2 files, which have no biases');
  const kn = w.kernels;
  const mark = kn.mark();
  const d = rankDims(c, r);
  const gs = w.groupSize;
  const { maxM, contextLength: seq } = o;
  const hs = d.headSize;
  const qDim = d.nHeads * hs;
  const kvDim = d.nKvHeads * hs;
  const widest = Math.max(d.dim, qDim, d.hidden);
  for (const [what, n] of [['dim', d.dim], ['this rank\'s attention output', qDim], ['this rank\'s hidden units', d.hidden]] as const) {
    if (n % gs !== 0) throw new PlanError(`runqExact: ${what} (${n}) must be whole groups of ${gs}`);
  }
  // Everything the kernels read or write, allocated before any view is taken (a later alloc may grow the memory).
  const at = {
    x: kn.alloc(maxM * d.dim * 4), partial: kn.alloc(maxM * d.dim * 4), xn: kn.alloc(maxM * d.dim * 4),
    qkv: kn.alloc(maxM * d.qkv * 4), att: kn.alloc(maxM * qDim * 4), h13: kn.alloc(maxM * 2 * d.hidden * 4), hb: kn.alloc(maxM * d.hidden * 4),
    xq: kn.alloc(maxM * widest), xs: kn.alloc(((maxM * widest) / gs) * 4),
    xsel: kn.alloc(o.maxLogitRows * d.dim * 4), logits: kn.alloc(o.maxLogitRows * d.vocab * 4),
  };
  const v = {
    x: kn.f32(at.x, maxM * d.dim), partial: kn.f32(at.partial, maxM * d.dim), xn: kn.f32(at.xn, maxM * d.dim),
    qkv: kn.f32(at.qkv, maxM * d.qkv), att: kn.f32(at.att, maxM * qDim), h13: kn.f32(at.h13, maxM * 2 * d.hidden), hb: kn.f32(at.hb, maxM * d.hidden),
    xq: { q: int8s(kn, at.xq, maxM * widest), s: kn.f32(at.xs, (maxM * widest) / gs) },
    xsel: kn.f32(at.xsel, o.maxLogitRows * d.dim), logits: kn.f32(at.logits, o.maxLogitRows * d.vocab),
  };
  const xq: W8A8Operand = { q: at.xq, s: at.xs };
  const tokens = new Int32Array(maxM);
  const positions = new Int32Array(maxM);
  const slots = new Int32Array(maxM);
  const tables = ropeTables(c.headSize, seq, c.ropeTheta, c.ropeScaling, glibcTrig);
  // (slot, layer) → (seq, kvDim) keys and values, as runq.c's cache rows.
  const cache = Array.from({ length: o.slots }, () => w.layers.map(() => ({ k: new Float32Array(seq * kvDim), v: new Float32Array(seq * kvDim) })));
  const scores = new Float32Array(seq);
  const eps = c.normEps;
  const { kvMul, headOffset } = d;
  const sqrtHs = f(Math.sqrt(hs));

  /** runq.c's `quantize` of m rows of n values, then its matmul by wt into y. */
  const matmul = (y: number, x: Float32Array, wt: W8A8Operand, m: number, k: number, n: number, into: W8A8Into): void => {
    quantizeQ8(x, m * k, gs, v.xq);
    w.w8a8.run({ y, x: xq, w: wt, m, k, n, groupSize: gs, into });
  };
  const rowParallel = (name: string, wt: W8A8Operand, x: Float32Array, k: number, input: ExactOp): RowOp<ExactOp> => {
    checkRowSplit(r, name);
    const { rows } = o;
    const y = rows.into === 'x' ? at.x : at.partial;
    const into: W8A8Into = rows.into === 'x' ? 'add' : rows.continueSum ? 'continue' : 'set';
    return {
      matmul: (m) => {
        input(m);
        matmul(y, x, wt, m, k, d.dim, into);
      },
      addSum: rows.sumIn === 'x' ? [] : [(m) => add(v.x, v.partial, m * d.dim)],
    };
  };
  /** run.c's attention for row r, head h: scores, softmax (glibc's expf), then the weighted values in order. */
  const attend = (l: number, r: number, h: number): void => {
    const pos = positions[r]!;
    const { k, v: vals } = cache[slots[r]!]![l]!;
    const qo = r * d.qkv + h * hs;
    const kvo = Math.floor((h + headOffset) / kvMul) * hs;
    for (let t = 0; t <= pos; t++) {
      let score = 0;
      for (let i = 0; i < hs; i++) score = f(score + f(v.qkv[qo + i]! * k[t * kvDim + kvo + i]!));
      scores[t] = f(score / sqrtHs);
    }
    let max = scores[0]!;
    for (let t = 1; t <= pos; t++) if (scores[t]! > max) max = scores[t]!;
    let sum = 0;
    for (let t = 0; t <= pos; t++) {
      scores[t] = expf(f(scores[t]! - max));
      sum = f(sum + scores[t]!);
    }
    for (let t = 0; t <= pos; t++) scores[t] = f(scores[t]! / sum);
    const oo = r * qDim + h * hs;
    v.att.fill(0, oo, oo + hs);
    for (let t = 0; t <= pos; t++) {
      const a = scores[t]!;
      for (let i = 0; i < hs; i++) v.att[oo + i] = f(v.att[oo + i]! + f(a * vals[t * kvDim + kvo + i]!));
    }
  };
  const layers: LayerOps<ExactOp>[] = w.layers.map((L, l) => ({
    qkv: (m) => {
      rmsnorm(v.xn, v.x, L.attentionNorm, m, d.dim, eps);
      matmul(at.qkv, v.xn, L.wqkv, m, d.dim, d.qkv, 'set');
    },
    // llama2.c v2 files, the only ones runqExact takes, have no q/k norm
    qkNorm: [],
    rope: (m) => {
      for (let r = 0; r < m; r++) {
        const row = v.qkv.subarray(r * d.qkv, (r + 1) * d.qkv);
        const p = positions.subarray(r, r + 1);
        rope(row, 1, d.nHeads, hs, p, tables, c.ropeStyle);
        rope(row.subarray(qDim), 1, d.nKvHeads, hs, p, tables, c.ropeStyle);
        const { k, v: vals } = cache[slots[r]!]![l]!;
        k.set(row.subarray(qDim, qDim + kvDim), positions[r]! * kvDim);
        vals.set(row.subarray(qDim + kvDim, qDim + 2 * kvDim), positions[r]! * kvDim);
      }
    },
    attention: (m) => {
      for (let r = 0; r < m; r++) for (let h = 0; h < d.nHeads; h++) attend(l, r, h);
    },
    wo: rowParallel(`layers.${l}.attention.wo`, L.wo, v.att, qDim, () => {}),
    w13: (m) => {
      rmsnorm(v.xn, v.x, L.ffnNorm, m, d.dim, eps);
      matmul(at.h13, v.xn, L.w13, m, d.dim, 2 * d.hidden, 'set');
    },
    w2: rowParallel(`layers.${l}.feed_forward.w2`, L.w2, v.hb, d.hidden, (m) => {
      // runq.c's SwiGLU: val *= 1 / (1 + expf(-val)); val *= w3's.
      for (let r = 0; r < m; r++) {
        for (let i = 0; i < d.hidden; i++) {
          const a = v.h13[r * 2 * d.hidden + i]!;
          const s = f(1 / f(1 + expf(-a)));
          v.hb[r * d.hidden + i] = f(f(a * s) * v.h13[r * 2 * d.hidden + d.hidden + i]!);
        }
      }
    }),
  }));
  const embed: ExactOp = (m) => {
    for (let r = 0; r < m; r++) {
      const t = tokens[r]! * d.dim;
      for (let j = 0; j < d.dim; j++) v.x[r * d.dim + j] = f(w.tokens.q[t + j]! * w.tokens.s[Math.floor((t + j) / gs)]!);
    }
  };
  const head: ExactOp = (m) => {
    rmsnorm(v.xsel, v.xsel, w.norm, m, d.dim, eps);
    matmul(at.logits, v.xsel, w.output, m, d.dim, d.vocab, 'set');
  };
  return {
    kernels: kn, mark, dim: d.dim, maxM, maxLogitRows: o.maxLogitRows, vocab: d.vocab,
    tokens, positions, slots, acts: { x: v.x, partial: v.partial }, xsel: v.xsel, logits: v.logits,
    embed, layers, head, cacheBytes: o.slots * c.nLayers * 2 * seq * kvDim * 4, m: 0,
  };
}

export type ExactBackend = Backend<ExactWeights, ExactRunState, ExactOp>;

/** The runqExact CPU backend: every op computes when `run` is called, so a stage has nothing to submit. */
export function createExactBackend(): ExactBackend {
  return {
    createWeights: createExactWeights,
    // The memory goes with its last reference.
    destroyWeights: () => {},
    createState: createExactState,
    destroyState: (s) => s.kernels.release(s.mark),

    begin(s, input) {
      const { m } = input;
      if (m > s.maxM) throw new InvalidArgumentError(`a step of ${m} rows exceeds the state's ${s.maxM}`);
      s.m = m;
      s.tokens.set(input.tokens.subarray(0, m));
      s.positions.set(input.positions.subarray(0, m));
      s.slots.set(input.slots.subarray(0, m));
    },
    run: (s, op) => op(s.m),
    submit: () => {},
    async read(s, from, into) {
      into.set(s.acts[from].subarray(0, into.length));
    },
    write(s, to, v) {
      s.acts[to].set(v);
    },
    async head(s, logitRows, into) {
      const nl = logitRows.length;
      if (nl === 0) return;
      if (nl > s.maxLogitRows) throw new InvalidArgumentError(`${nl} logit rows exceed the state's ${s.maxLogitRows}`);
      for (let j = 0; j < nl; j++) s.xsel.set(s.acts.x.subarray(logitRows[j]! * s.dim, (logitRows[j]! + 1) * s.dim), j * s.dim);
      s.head(nl);
      into.set(s.logits.subarray(0, nl * s.vocab));
    },
  };
}
