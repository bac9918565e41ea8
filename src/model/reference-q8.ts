/**
 * The oracle for Q8_0 models: llama2.c's `runq.c` forward pass (W8A8), step for step in f32.
 *
 * runq.c keeps every matrix as int8 values with one f32 scale per group of GS values along a
 * row, and quantises the activations the same way before every matmul: per group, scale =
 * max|x| / 127 and q = round(x / scale) (C's round: halves away from zero). A matmul row is
 * then Σ over groups, in order, of (float)(Σ q_x·q_w as int32) · s_w · s_x. Norms, RoPE,
 * attention, SwiGLU and the residual stay f32 exactly as in run.c (reference.ts). The
 * embedding table is dequantised once (q·s) and rows are copied from it.
 *
 * Weight-only mode (f32 activations) is the f32 oracle on the dequantised weights
 * (`dequantizeQ8Model` + reference.ts).
 */
import type { ModelConfig } from './config.js';
import { chunkBounds, summationOrder } from '../collective/layout.js';
import { glibcTrig } from './glibc-trig.js';
import {
  add, attention, createRunState, embed, generateLoop, rmsnorm, rope, siluMul, type ReferenceModel, type RunState, type TransformerWeights,
} from './reference.js';

const f = Math.fround;

/** One Q8_0 matrix (rows, cols): int8 values and an f32 scale per group of a row. */
export interface Q8Tensor {
  q: Int8Array; // (rows · cols)
  s: Float32Array; // (rows · cols / groupSize)
}

/** runq.c's `TransformerWeights`; per-layer matrices are one tensor per layer, as it maps them. */
export interface Q8TransformerWeights {
  groupSize: number;
  tokens: Q8Tensor; // (vocab_size, dim)
  rmsAttWeight: Float32Array; // (layer, dim)
  rmsFfnWeight: Float32Array; // (layer, dim)
  wq: Q8Tensor[]; // layer → (n_heads · head_size, dim)
  wk: Q8Tensor[]; // layer → (n_kv_heads · head_size, dim)
  wv: Q8Tensor[]; // layer → (n_kv_heads · head_size, dim)
  wo: Q8Tensor[]; // layer → (dim, n_heads · head_size)
  w1: Q8Tensor[]; // layer → (hidden_dim, dim)
  w2: Q8Tensor[]; // layer → (dim, hidden_dim)
  w3: Q8Tensor[]; // layer → (hidden_dim, dim)
  rmsFinalWeight: Float32Array; // (dim,)
  wcls: Q8Tensor; // (vocab_size, dim); the embedding's tensor when shared
}

export interface Q8ReferenceModel {
  config: ModelConfig;
  weights: Q8TransformerWeights;
}

/** C's round(): to the nearest integer, halves away from zero. */
export function roundHalfAway(v: number): number {
  const a = Math.abs(v);
  const r = Math.floor(a);
  return Math.sign(v) * (a - r >= 0.5 ? r + 1 : r);
}

/**
 * runq.c's `quantize` of x[0..n) in groups of gs into (q, s). An all-zero group has scale 0 and
 * 0/0 values; C's conversion of NaN is undefined (x86 gives 0 after truncation to int8), so 0.
 */
export function quantizeQ8(x: Float32Array, n: number, gs: number, out: Q8Tensor = { q: new Int8Array(n), s: new Float32Array(n / gs) }): Q8Tensor {
  for (let g = 0; g < n / gs; g++) {
    let wmax = 0;
    for (let i = 0; i < gs; i++) {
      const v = Math.abs(x[g * gs + i]!);
      if (v > wmax) wmax = v;
    }
    const scale = f(wmax / 127);
    out.s[g] = scale;
    for (let i = 0; i < gs; i++) {
      const qv = f(x[g * gs + i]! / scale);
      out.q[g * gs + i] = Number.isNaN(qv) ? 0 : roundHalfAway(qv);
    }
  }
  return out;
}

/** x[i] = q[i] · s[i / gs] (runq.c's `dequantize`). */
export function dequantizeQ8(t: Q8Tensor, n: number, gs: number, out = new Float32Array(n)): Float32Array {
  for (let i = 0; i < n; i++) out[i] = f(t.q[i]! * t.s[Math.floor(i / gs)]!);
  return out;
}

/**
 * runq.c's `matmul`: xout[i] = Σ_groups (float)(Σ x.q·w.q) · w.s · x.s for W (d, n) and x (n),
 * the groups summed in order into an f32 accumulator.
 */
export function matmulQ8(xout: Float32Array, x: Q8Tensor, w: Q8Tensor, n: number, d: number, gs: number, split?: readonly number[]): void {
  if (split) return matmulQ8Split(xout, x, w, n, d, gs, split);
  for (let i = 0; i < d; i++) {
    const row = i * n;
    let val = 0;
    for (let j = 0; j + gs <= n; j += gs) {
      let ival = 0;
      for (let k = 0; k < gs; k++) ival += x.q[j + k]! * w.q[row + j + k]!;
      val = f(val + f(f(ival * w.s[(row + j) / gs]!) * x.s[j / gs]!));
    }
    xout[i] = val;
  }
}

/**
 * `matmulQ8` as a row-parallel split computes it: rank r sums its columns [split[r],
 * split[r+1]) in runq.c's order, and the partial sums meet in the all-reduce's documented
 * order (collective/layout.ts `summationOrder`, for a one-row step).
 */
function matmulQ8Split(xout: Float32Array, x: Q8Tensor, w: Q8Tensor, n: number, d: number, gs: number, split: readonly number[]): void {
  const world = split.length - 1;
  const chunks = chunkBounds(d, world);
  for (let i = 0; i < d; i++) {
    const row = i * n;
    const partial = new Float32Array(world);
    for (let r = 0; r < world; r++) {
      let val = 0;
      for (let j = split[r]!; j < split[r + 1]!; j += gs) {
        let ival = 0;
        for (let k = 0; k < gs; k++) ival += x.q[j + k]! * w.q[row + j + k]!;
        val = f(val + f(f(ival * w.s[(row + j) / gs]!) * x.s[j / gs]!));
      }
      partial[r] = val;
    }
    let c = 0;
    while (i >= chunks[c + 1]!) c++;
    const order = summationOrder(c, world);
    let sum = partial[order[0]!]!;
    for (let k = 1; k < world; k++) sum = f(sum + partial[order[k]!]!);
    xout[i] = sum;
  }
}

/**
 * Column boundaries of the row-parallel matmuls' inputs at a TP degree (from the plan's ranges):
 * wo's input is the attention output (heads × head size), w2's the MLP hidden vector.
 */
export interface Q8Split {
  wo: readonly number[];
  w2: readonly number[];
}

/** runq.c's `RunState`: the f32 buffers of run.c plus the quantised x (dim) and hb (hidden). */
export interface Q8RunState extends RunState {
  tokenEmbeddingTable: Float32Array; // (vocab_size, dim), dequantised once
  xq: Q8Tensor; // (dim,)
  hq: Q8Tensor; // (hidden_dim,)
}

export function createQ8RunState(model: Q8ReferenceModel): Q8RunState {
  const c = model.config;
  const gs = model.weights.groupSize;
  const qDim = c.nHeads * c.headSize;
  const xn = Math.max(c.dim, qDim);
  return {
    ...createRunState(c, 'f32', glibcTrig), // runq.c's cosf / sinf
    tokenEmbeddingTable: dequantizeQ8(model.weights.tokens, c.vocabSize * c.dim, gs),
    xq: { q: new Int8Array(xn), s: new Float32Array(xn / gs) },
    hq: { q: new Int8Array(c.hiddenDim), s: new Float32Array(c.hiddenDim / gs) },
  };
}

/** runq.c's `forward`: one token at one position; returns the logits (a view into state). */
export function forwardQ8(model: Q8ReferenceModel, s: Q8RunState, token: number, pos: number, split?: Q8Split): Float32Array {
  const c = model.config;
  const w = model.weights;
  const gs = w.groupSize;
  const { dim, hiddenDim, headSize, nHeads, nKvHeads } = c;
  const qDim = nHeads * headSize;
  const kvDim = nKvHeads * headSize;
  const positions = Int32Array.of(pos);
  const x = s.x;

  embed(x, s.tokenEmbeddingTable, [token], dim);
  for (let l = 0; l < c.nLayers; l++) {
    // attention rmsnorm, quantised once for q, k and v
    rmsnorm(s.xb, x, w.rmsAttWeight.subarray(l * dim, (l + 1) * dim), 1, dim, c.normEps);
    quantizeQ8(s.xb, dim, gs, s.xq);
    matmulQ8(s.q, s.xq, w.wq[l]!, dim, qDim, gs);
    matmulQ8(s.k, s.xq, w.wk[l]!, dim, kvDim, gs);
    matmulQ8(s.v, s.xq, w.wv[l]!, dim, kvDim, gs);

    rope(s.q, 1, nHeads, headSize, positions, s.rope, c.ropeStyle);
    rope(s.k, 1, nKvHeads, headSize, positions, s.rope, c.ropeStyle);
    const layerCache = l * c.seqLen * kvDim;
    s.keyCache.set(s.k, layerCache + pos * kvDim);
    s.valueCache.set(s.v, layerCache + pos * kvDim);
    const kCache = s.keyCache.subarray(layerCache, layerCache + c.seqLen * kvDim);
    const vCache = s.valueCache.subarray(layerCache, layerCache + c.seqLen * kvDim);
    attention(s.xb, s.q, kCache, vCache, 1, positions, nHeads, nKvHeads, headSize, kvDim);

    // output projection of the quantised attention output, then the residual
    quantizeQ8(s.xb, qDim, gs, s.xq);
    matmulQ8(s.xb2, s.xq, w.wo[l]!, qDim, dim, gs, split?.wo);
    add(x, s.xb2, dim);

    // ffn: w2(silu(w1(x)) · w3(x)), x and the hidden vector each quantised first
    rmsnorm(s.xb, x, w.rmsFfnWeight.subarray(l * dim, (l + 1) * dim), 1, dim, c.normEps);
    quantizeQ8(s.xb, dim, gs, s.xq);
    matmulQ8(s.hb, s.xq, w.w1[l]!, dim, hiddenDim, gs);
    matmulQ8(s.hb2, s.xq, w.w3[l]!, dim, hiddenDim, gs);
    siluMul(s.hb, s.hb, s.hb2, hiddenDim); // runq.c's SwiGLU is run.c's, float for float
    quantizeQ8(s.hb, hiddenDim, gs, s.hq);
    matmulQ8(s.xb, s.hq, w.w2[l]!, hiddenDim, dim, gs, split?.w2);
    add(x, s.xb, dim);
  }
  rmsnorm(x, x, w.rmsFinalWeight, 1, dim, c.normEps);
  quantizeQ8(x, dim, gs, s.xq);
  matmulQ8(s.logits, s.xq, w.wcls, dim, c.vocabSize, gs);
  return s.logits;
}

/** runq.c's `generate` loop (see reference.ts `generate`): BOS first, stops when BOS is picked. */
export function generateQ8(
  model: Q8ReferenceModel, promptTokens: readonly number[], steps: number, pick: (logits: Float32Array) => number, split?: Q8Split,
): number[] {
  const state = createQ8RunState(model);
  return generateLoop(model.config.seqLen, promptTokens, steps, (token, pos) => forwardQ8(model, state, token, pos, split), pick);
}

/** The f32 model of the dequantised weights (q·s): the oracle of weight-only (f32 activation) runs. */
export function dequantizeQ8Model(model: Q8ReferenceModel): ReferenceModel {
  const c = model.config;
  const w = model.weights;
  const gs = w.groupSize;
  const stack = (ts: Q8Tensor[]): Float32Array => {
    const n = ts[0]!.q.length;
    const out = new Float32Array(n * ts.length);
    ts.forEach((t, l) => dequantizeQ8(t, n, gs, out.subarray(l * n, (l + 1) * n)));
    return out;
  };
  const tokenEmbeddingTable = dequantizeQ8(w.tokens, c.vocabSize * c.dim, gs);
  const weights: TransformerWeights = {
    tokenEmbeddingTable,
    rmsAttWeight: w.rmsAttWeight,
    rmsFfnWeight: w.rmsFfnWeight,
    wq: stack(w.wq),
    wk: stack(w.wk),
    wv: stack(w.wv),
    wo: stack(w.wo),
    w1: stack(w.w1),
    w2: stack(w.w2),
    w3: stack(w.w3),
    rmsFinalWeight: w.rmsFinalWeight,
    wcls: w.wcls === w.tokens ? tokenEmbeddingTable : dequantizeQ8(w.wcls, c.vocabSize * c.dim, gs),
  };
  return { config: c, weights };
}
