/**
 * The oracle of GGUF runs with int8 activations (engine `int8Activations`): llama.cpp's CPU
 * arithmetic for quantised matrices. Before a Q4_0 or Q8_0 matmul the input is quantised per
 * group of 32 as runq.c does (reference-q8.ts `quantizeQ8`), and each output is Σ over groups, in
 * order, of (f32)(Σ xq·wq as int32) · s_w · s_x (`matmulQ8`; a Q4_0 group is its exact Q8_0 form,
 * nibble − 8 with the same scale). Matrices the stream keeps f32 (F32/F16 tensors, or a fused
 * group with mixed types) run reference.ts's f32 matmul on f32 activations; q8_m ones (GGUF's
 * Q4_1, Q5_x, K-quants, and Q8_0/Q4_0 fused beside them) CPU ranks' sums (reference-q8m.ts).
 * Everything else is reference.ts's forward pass, Qwen2's q/k/v biases and Qwen3's q/k norms included.
 */
import type { ModelConfig } from './config.js';
import {
  add, attention, createRunState, embed, generateLoop, headNorm, matmul, rmsnorm, rope, siluMul, type RunState, type TransformerWeights,
} from './reference.js';
import { matmulQ8, quantizeQ8, type Q8Split, type Q8Tensor } from './reference-q8.js';
import { q4ToQ8 } from './reference-q4.js';
import { loadGgufDequantized } from './formats/gguf.js';
import { splitQ4Blocks, splitQ8Blocks } from './formats/gguf-blocks.js';
import { AFFINE_GROUP, isAffineType, splitAffineBlocks } from './formats/gguf-kquants.js';
import { matmulQ8mA8, q8mOf, type Q8mTensor } from './reference-q8m.js';
import { fusedName } from '../cpu/kquant-bytes.js';

/** One matrix (rows, cols) as the engine multiplies it. */
export type Int8Matrix = { kind: 'int8'; t: Q8Tensor } | { kind: 'f32'; w: Float32Array } | { kind: 'q8m'; t: Q8mTensor };

export interface Int8Layer {
  wq: Int8Matrix;
  wk: Int8Matrix;
  wv: Int8Matrix;
  wo: Int8Matrix;
  w1: Int8Matrix;
  w2: Int8Matrix;
  w3: Int8Matrix;
}

export interface Int8ReferenceModel {
  config: ModelConfig;
  /** The embedding table as the engine's embedding gives its rows (dequantised). */
  tokenEmbeddingTable: Float32Array;
  rmsAttWeight: Float32Array; // (layer, dim)
  rmsFfnWeight: Float32Array; // (layer, dim)
  rmsFinalWeight: Float32Array;
  /** Qwen2's q/k/v biases and Qwen3's per-head q/k norms, as reference.ts's weights hold them (f32 in every file). */
  extras: Pick<TransformerWeights, 'bq' | 'bk' | 'bv' | 'qNorm' | 'kNorm'>;
  layers: Int8Layer[];
  wcls: Int8Matrix;
}

const GS = 32;

/** A GGUF file's model as the engine runs it with int8 activations (the stream's dtype per tensor). */
export async function loadGgufInt8(bytes: Uint8Array): Promise<Int8ReferenceModel> {
  const { layout, model } = await loadGgufDequantized(bytes);
  const c = layout.config;
  const raw = new Map<string, Int8Matrix>();
  // Q8_0/Q4_0 tensors fused beside a q8_m one (wq|wk|wv, w1|w3) run in its exact q8_m form.
  const q8m = new Set(layout.tensors.filter((t) => t.dtype === 'q8_m').map((t) => fusedName(t.name)));
  layout.tensors.filter((t) => !t.aliasOf).forEach((t, i) => {
    const seg = layout.segments[i]!;
    const src = bytes.subarray(seg.offset, seg.offset + seg.byteLength);
    const n = t.shape[0] * t.shape[1];
    const asQ8m = q8m.has(fusedName(t.name));
    if (t.dtype === 'q8_0') {
      const q = new Int8Array(n);
      const s = new Float32Array(n / GS);
      splitQ8Blocks(src, q, s);
      raw.set(t.name, asQ8m ? { kind: 'q8m', t: q8mOf({ kind: 'q8_0', t: { q, s } }, n) } : { kind: 'int8', t: { q, s } });
    } else if (t.dtype === 'q4_0') {
      const q = new Uint8Array(n / 2);
      const s = new Float32Array(n / GS);
      splitQ4Blocks(src, q, s);
      raw.set(t.name, asQ8m ? { kind: 'q8m', t: q8mOf({ kind: 'q4_0', t: { q, s } }, n) } : { kind: 'int8', t: q4ToQ8({ q, s }, n) });
    } else if (t.dtype === 'q8_m' && isAffineType(seg.type)) {
      const q = new Uint8Array(n);
      const s = new Float32Array((n / AFFINE_GROUP[seg.type]) * 2);
      splitAffineBlocks(seg.type, src, q, s);
      raw.set(t.name, { kind: 'q8m', t: { q, s, groupSize: AFFINE_GROUP[seg.type] } });
    }
  });
  const w = model.weights;
  const f32 = (all: Float32Array, l: number, size: number): Int8Matrix => ({ kind: 'f32', w: all.subarray(l * size, (l + 1) * size) });
  const qDim = c.nHeads * c.headSize;
  const kvDim = c.nKvHeads * c.headSize;
  const sizes = { wq: qDim * c.dim, wk: kvDim * c.dim, wv: kvDim * c.dim, wo: c.dim * qDim, w1: c.hiddenDim * c.dim, w2: c.dim * c.hiddenDim, w3: c.hiddenDim * c.dim };
  const names = { wq: 'attention.wq', wk: 'attention.wk', wv: 'attention.wv', wo: 'attention.wo', w1: 'feed_forward.w1', w2: 'feed_forward.w2', w3: 'feed_forward.w3' };
  const layers = Array.from({ length: c.nLayers }, (_, l) => {
    const m = (k: keyof Int8Layer) => raw.get(`layers.${l}.${names[k]}`) ?? f32(w[k], l, sizes[k]);
    return { wq: m('wq'), wk: m('wk'), wv: m('wv'), wo: m('wo'), w1: m('w1'), w2: m('w2'), w3: m('w3') };
  });
  const wcls = raw.get(c.sharedClassifier ? 'tok_embeddings' : 'output') ?? { kind: 'f32', w: w.wcls };
  return {
    config: c, tokenEmbeddingTable: w.tokenEmbeddingTable, rmsAttWeight: w.rmsAttWeight, rmsFfnWeight: w.rmsFfnWeight,
    rmsFinalWeight: w.rmsFinalWeight, extras: { bq: w.bq, bk: w.bk, bv: w.bv, qNorm: w.qNorm, kNorm: w.kNorm }, layers, wcls,
  };
}

/** y (d) = W (d, n) · x (n), quantising x first for an int8 matrix; `split` as matmulQ8's. */
function mm(y: Float32Array, x: Float32Array, w: Int8Matrix, n: number, d: number, split?: readonly number[]): void {
  if (w.kind === 'f32') return matmul(y, x, w.w, 1, n, d);
  if (w.kind === 'q8m') {
    if (split) throw new RangeError('the q8_m int8 oracle runs one rank (no split)');
    return matmulQ8mA8(y, quantizeQ8(x, n, GS), w.t, n, d);
  }
  matmulQ8(y, quantizeQ8(x, n, GS), w.t, n, d, GS, split);
}

/** One token at one position; returns the logits (a view into state). */
export function forwardInt8(model: Int8ReferenceModel, s: RunState, token: number, pos: number, split?: Q8Split): Float32Array {
  const c = model.config;
  const { dim, hiddenDim, headSize, nHeads, nKvHeads } = c;
  const qDim = nHeads * headSize;
  const kvDim = nKvHeads * headSize;
  const positions = Int32Array.of(pos);
  const x = s.x;
  embed(x, model.tokenEmbeddingTable, [token], dim);
  for (let l = 0; l < c.nLayers; l++) {
    const L = model.layers[l]!;
    rmsnorm(s.xb, x, model.rmsAttWeight.subarray(l * dim, (l + 1) * dim), 1, dim, c.normEps);
    const xb = s.xb.subarray(0, dim);
    mm(s.q, xb, L.wq, dim, qDim);
    mm(s.k, xb, L.wk, dim, kvDim);
    mm(s.v, xb, L.wv, dim, kvDim);
    const { bq, bk, bv, qNorm, kNorm } = model.extras;
    if (bq && bk && bv) {
      add(s.q, bq.subarray(l * qDim, (l + 1) * qDim), qDim);
      add(s.k, bk.subarray(l * kvDim, (l + 1) * kvDim), kvDim);
      add(s.v, bv.subarray(l * kvDim, (l + 1) * kvDim), kvDim);
    }
    if (qNorm && kNorm) {
      headNorm(s.q, 1, qDim, nHeads, headSize, qNorm.subarray(l * headSize, (l + 1) * headSize), c.normEps);
      headNorm(s.k, 1, kvDim, nKvHeads, headSize, kNorm.subarray(l * headSize, (l + 1) * headSize), c.normEps);
    }
    rope(s.q, 1, nHeads, headSize, positions, s.rope, c.ropeStyle);
    rope(s.k, 1, nKvHeads, headSize, positions, s.rope, c.ropeStyle);
    const layerCache = l * c.seqLen * kvDim;
    s.keyCache.set(s.k, layerCache + pos * kvDim);
    s.valueCache.set(s.v, layerCache + pos * kvDim);
    const kCache = s.keyCache.subarray(layerCache, layerCache + c.seqLen * kvDim);
    const vCache = s.valueCache.subarray(layerCache, layerCache + c.seqLen * kvDim);
    attention(s.xb, s.q, kCache, vCache, 1, positions, nHeads, nKvHeads, headSize, kvDim);
    mm(s.xb2, s.xb.subarray(0, qDim), L.wo, qDim, dim, split?.wo);
    add(x, s.xb2, dim);
    rmsnorm(s.xb, x, model.rmsFfnWeight.subarray(l * dim, (l + 1) * dim), 1, dim, c.normEps);
    mm(s.hb, s.xb.subarray(0, dim), L.w1, dim, hiddenDim);
    mm(s.hb2, s.xb.subarray(0, dim), L.w3, dim, hiddenDim);
    siluMul(s.hb, s.hb, s.hb2, hiddenDim);
    mm(s.xb, s.hb, L.w2, hiddenDim, dim, split?.w2);
    add(x, s.xb, dim);
  }
  rmsnorm(x, x, model.rmsFinalWeight, 1, dim, c.normEps);
  mm(s.logits, x, model.wcls, dim, c.vocabSize);
  return s.logits;
}

/** reference.ts `generate` with int8 activations (BOS first, stops when BOS is picked). */
export function generateInt8(
  model: Int8ReferenceModel, promptTokens: readonly number[], steps: number, pick: (logits: Float32Array) => number, split?: Q8Split,
): number[] {
  const state = createRunState(model.config);
  return generateLoop(model.config.seqLen, promptTokens, steps, (token, pos) => forwardInt8(model, state, token, pos, split), pick);
}
