/**
 * The oracle: a plain CPU forward pass that follows llama2.c's `run.c` step for step, in f32.
 *
 * Every test compares against this file (GPU kernels op by op, the engine token by token), so
 * it favours clarity and bit-faithfulness to run.c over speed. f32 arithmetic is emulated with
 * `Math.fround` after every operation: the product or sum of two f32 values computed in f64 and
 * then rounded to f32 equals the f32 result (f64 has more than 2·24+2 bits), so each rounded
 * step matches what run.c computes in `float` (built without -ffast-math / FMA contraction).
 * Transcendentals (exp, cos, sin, pow, sqrt) are the f64 result rounded to f32: correctly
 * rounded in practice. glibc's expf/cosf/sinf are 1 ulp off for ~0.05% of inputs, so logits
 * differ from a gcc/glibc build of run.c in the last bits (≤ 2e-5 over the 256 greedy steps of
 * stories260K) while the tokens are the same (the test fixtures hold run.c's tokens).
 *
 * Layout conventions: row-major, weights stored W[out][in] (a row per output unit).
 */
import type { Llama3RopeScaling, ModelConfig, RopeScaling } from './config.js';
import { f32ToF16 } from './formats/gguf-blocks.js';
import { f16ToF32 } from './formats/safetensors.js';

const f = Math.fround;

// ---------------------------------------------------------------------------------------------
// Per-op functions (the GPU kernels are tested against these)
// ---------------------------------------------------------------------------------------------

/**
 * y[m][n] = sum_j x[m][j] * w[n][j], for j = 0..k-1 in order, like run.c's `matmul`.
 * The accumulator is rounded to f32 after each product and each add (Math.fround per step).
 */
export function matmul(y: Float32Array, x: Float32Array, w: Float32Array, m: number, k: number, n: number): void {
  for (let r = 0; r < m; r++) {
    const xo = r * k;
    for (let i = 0; i < n; i++) {
      const wo = i * k;
      let val = 0;
      for (let j = 0; j < k; j++) val = f(val + f(w[wo + j]! * x[xo + j]!));
      y[r * n + i] = val;
    }
  }
}

/** Per row, like run.c: ss = Σx² (f32), ss /= dim, ss += eps, ss = 1/sqrt(ss); y = weight·(ss·x). */
export function rmsnorm(y: Float32Array, x: Float32Array, weight: Float32Array, m: number, dim: number, eps: number): void {
  const epsF = f(eps);
  for (let r = 0; r < m; r++) {
    const o = r * dim;
    let ss = 0;
    for (let j = 0; j < dim; j++) ss = f(ss + f(x[o + j]! * x[o + j]!));
    ss = f(ss / dim);
    ss = f(ss + epsF);
    ss = f(1 / f(Math.sqrt(ss)));
    for (let j = 0; j < dim; j++) y[o + j] = f(weight[j]! * f(ss * x[o + j]!));
  }
}

/** The sin and cos a RoPE table rounds to f32: `Math`'s (correctly rounded in practice) or glibc's (`glibc-trig.ts`). */
export interface Trig {
  sin(x: number): number;
  cos(x: number): number;
}
export const mathTrig: Trig = { sin: Math.sin, cos: Math.cos };

/**
 * Qwen3's per-head RMSNorm of q or k, in place: x (m, nHeads·headSize), rows `stride` floats
 * apart, each head normalised as its own row of headSize with the one shared weight.
 */
export function headNorm(x: Float32Array, m: number, stride: number, nHeads: number, headSize: number, weight: Float32Array, eps: number): void {
  for (let r = 0; r < m; r++) {
    const row = x.subarray(r * stride, r * stride + nHeads * headSize);
    rmsnorm(row, row, weight, nHeads, headSize, eps);
  }
}

/**
 * RoPE cos/sin tables, (seqLen, headSize/2): entry [pos][i] is for frequency index i.
 * Computed as run.c does in f32: freq = 1 / theta^((2i) / headSize), val = pos * freq.
 */
export function ropeTables(headSize: number, seqLen: number, theta: number, scaling?: RopeScaling, trig: Trig = mathTrig): { cos: Float32Array; sin: Float32Array } {
  const half = headSize / 2;
  const cos = new Float32Array(seqLen * half);
  const sin = new Float32Array(seqLen * half);
  const thetaF = f(theta);
  const freqs = new Float32Array(half);
  for (let i = 0; i < half; i++) freqs[i] = f(1 / f(Math.pow(thetaF, f((2 * i) / headSize))));
  if (scaling?.type === 'factors') for (let i = 0; i < half; i++) freqs[i] = f(freqs[i]! / scaling.factors[i]!);
  else if (scaling) scaleLlama3(freqs, scaling);
  for (let pos = 0; pos < seqLen; pos++) {
    for (let i = 0; i < half; i++) {
      const val = f(f(pos) * freqs[i]!);
      cos[pos * half + i] = f(trig.cos(val));
      sin[pos * half + i] = f(trig.sin(val));
    }
  }
  return { cos, sin };
}

/**
 * Llama 3's frequency scaling, as transformers' `_compute_llama3_parameters`: wavelengths longer
 * than original_context/low_freq_factor are divided by `factor`, shorter than
 * original_context/high_freq_factor kept, and those between interpolated smoothly.
 */
function scaleLlama3(freqs: Float32Array, s: Llama3RopeScaling): void {
  const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
  const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
  for (let i = 0; i < freqs.length; i++) {
    const freq = freqs[i]!;
    const wavelen = (2 * Math.PI) / freq;
    if (wavelen > lowWavelen) freqs[i] = f(freq / s.factor);
    else if (wavelen >= highWavelen) {
      const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      freqs[i] = f((1 - smooth) * (freq / s.factor) + smooth * freq);
    }
  }
}

/**
 * Rotates x (m, nHeads*headSize) in place; row r is at positions[r].
 * `interleaved` (llama2.c) rotates pairs (2i, 2i+1); `rotate_half` (HF) rotates (i, i + hs/2).
 */
export function rope(
  x: Float32Array, m: number, nHeads: number, headSize: number,
  positions: Int32Array | Uint32Array, tables: { cos: Float32Array; sin: Float32Array },
  style: 'interleaved' | 'rotate_half',
): void {
  const half = headSize / 2;
  for (let r = 0; r < m; r++) {
    const t = positions[r]! * half;
    for (let h = 0; h < nHeads; h++) {
      const base = r * nHeads * headSize + h * headSize;
      for (let i = 0; i < half; i++) {
        const fcr = tables.cos[t + i]!;
        const fci = tables.sin[t + i]!;
        const a = style === 'interleaved' ? base + 2 * i : base + i;
        const b = style === 'interleaved' ? a + 1 : a + half;
        const v0 = x[a]!;
        const v1 = x[b]!;
        x[a] = f(f(v0 * fcr) - f(v1 * fci));
        x[b] = f(f(v0 * fci) + f(v1 * fcr));
      }
    }
  }
}

/** In place over x[offset .. offset+n): subtract the max, exp, normalize (run.c's softmax). */
export function softmax(x: Float32Array, offset: number, n: number): void {
  let max = x[offset]!;
  for (let i = 1; i < n; i++) if (x[offset + i]! > max) max = x[offset + i]!;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const e = f(Math.exp(f(x[offset + i]! - max)));
    x[offset + i] = e;
    sum = f(sum + e);
  }
  for (let i = 0; i < n; i++) x[offset + i] = f(x[offset + i]! / sum);
}

/**
 * Causal multi-head attention over a KV cache, like run.c's per-head loop.
 * q: (m, nHeads*headSize); kCache/vCache: (seq, cacheStride), row t at t*cacheStride, with kv
 * head g at column g*headSize. Row r attends to t = 0..positions[r]. Query head h reads kv head
 * floor(h / (nHeads/nKvHeads)). Scores are divided by sqrt(headSize) (run.c divides; it does
 * not multiply by the reciprocal). out: (m, nHeads*headSize).
 */
export function attention(
  out: Float32Array, q: Float32Array, kCache: Float32Array, vCache: Float32Array, m: number,
  positions: Int32Array | Uint32Array, nHeads: number, nKvHeads: number, headSize: number, cacheStride: number,
): void {
  const kvMul = nHeads / nKvHeads;
  const scale = f(Math.sqrt(headSize));
  let maxPos = 0;
  for (let r = 0; r < m; r++) maxPos = Math.max(maxPos, positions[r]!);
  const att = new Float32Array(maxPos + 1);
  for (let r = 0; r < m; r++) {
    const pos = positions[r]!;
    for (let h = 0; h < nHeads; h++) {
      const qo = r * nHeads * headSize + h * headSize;
      const kvo = Math.floor(h / kvMul) * headSize;
      for (let t = 0; t <= pos; t++) {
        const ko = t * cacheStride + kvo;
        let score = 0;
        for (let i = 0; i < headSize; i++) score = f(score + f(q[qo + i]! * kCache[ko + i]!));
        att[t] = f(score / scale);
      }
      softmax(att, 0, pos + 1);
      out.fill(0, qo, qo + headSize);
      for (let t = 0; t <= pos; t++) {
        const vo = t * cacheStride + kvo;
        const a = att[t]!;
        for (let i = 0; i < headSize; i++) out[qo + i] = f(out[qo + i]! + f(a * vCache[vo + i]!));
      }
    }
  }
}

/** y = silu(a) * b, as run.c: val *= 1/(1+expf(-val)); val *= b. */
export function siluMul(y: Float32Array, a: Float32Array, b: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const v = a[i]!;
    const s = f(1 / f(1 + f(Math.exp(-v))));
    y[i] = f(f(v * s) * b[i]!);
  }
}

/** y += x (the residual). */
export function add(y: Float32Array, x: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) y[i] = f(y[i]! + x[i]!);
}

/** y[r] = table[tokens[r]] (rows of width dim). */
export function embed(y: Float32Array, table: Float32Array, tokens: ArrayLike<number>, dim: number): void {
  for (let r = 0; r < tokens.length; r++) y.set(table.subarray(tokens[r]! * dim, (tokens[r]! + 1) * dim), r * dim);
}

/** Index of the largest of x[0..n); ties go to the lowest index (run.c's sample_argmax). */
export function argmax(x: Float32Array, n: number): number {
  let best = 0;
  let max = x[0]!;
  for (let i = 1; i < n; i++) if (x[i]! > max) { max = x[i]!; best = i; }
  return best;
}

// ---------------------------------------------------------------------------------------------
// The whole model (run.c's Transformer)
// ---------------------------------------------------------------------------------------------

/** Views into one checkpoint buffer, as run.c's `TransformerWeights`. All W[out][in]. */
export interface TransformerWeights {
  tokenEmbeddingTable: Float32Array; // (vocab_size, dim)
  rmsAttWeight: Float32Array; // (layer, dim)
  rmsFfnWeight: Float32Array; // (layer, dim)
  wq: Float32Array; // (layer, n_heads * head_size, dim)
  wk: Float32Array; // (layer, n_kv_heads * head_size, dim)
  wv: Float32Array; // (layer, n_kv_heads * head_size, dim)
  /** Present when config.qkvBias (Qwen2): added after the q, k and v matmuls. */
  bq?: Float32Array; // (layer, n_heads * head_size)
  bk?: Float32Array; // (layer, n_kv_heads * head_size)
  bv?: Float32Array; // (layer, n_kv_heads * head_size)
  /** Present when config.qkNorm (Qwen3): each head of q (k) is RMS-normalised with this weight before RoPE. */
  qNorm?: Float32Array; // (layer, head_size)
  kNorm?: Float32Array; // (layer, head_size)
  wo: Float32Array; // (layer, dim, n_heads * head_size)
  /** Present when config.outBias: added to Wo's output. */
  bo?: Float32Array; // (layer, dim)
  w1: Float32Array; // (layer, hidden_dim, dim)
  w2: Float32Array; // (layer, dim, hidden_dim)
  w3: Float32Array; // (layer, hidden_dim, dim)
  rmsFinalWeight: Float32Array; // (dim)
  wcls: Float32Array; // (vocab_size, dim); the embedding table itself when shared
}

export interface ReferenceModel {
  config: ModelConfig;
  weights: TransformerWeights;
}

/** How the KV cache stores K and V: f32 as run.c, or rounded to f16 (nearest even) as they enter it. */
export type ReferenceKvCache = 'f32' | 'f16';

/** Rounds each value to the nearest f16 (ties to even), kept as f32: what an f16 cache gives back. */
export function roundToF16(x: Float32Array): Float32Array {
  for (let i = 0; i < x.length; i++) x[i] = f16ToF32(f32ToF16(x[i]!));
  return x;
}

/** Activation buffers for one token, as run.c's `RunState`. */
export interface RunState {
  x: Float32Array; // (dim) the residual stream
  xb: Float32Array; // (dim) scratch, also the attention output (n_heads * head_size)
  xb2: Float32Array; // (dim)
  hb: Float32Array; // (hidden_dim)
  hb2: Float32Array; // (hidden_dim)
  q: Float32Array; // (n_heads * head_size)
  k: Float32Array; // (kv_dim) this position's key, before it is copied into the cache
  v: Float32Array; // (kv_dim)
  logits: Float32Array; // (vocab_size)
  keyCache: Float32Array; // (layer, seq_len, kv_dim)
  valueCache: Float32Array; // (layer, seq_len, kv_dim)
  rope: { cos: Float32Array; sin: Float32Array }; // (seq_len, head_size / 2)
  kvCache: ReferenceKvCache;
}

export function createRunState(c: ModelConfig, kvCache: ReferenceKvCache = 'f32', trig: Trig = mathTrig): RunState {
  const qDim = c.nHeads * c.headSize;
  const kvDim = c.nKvHeads * c.headSize;
  return {
    x: new Float32Array(c.dim),
    xb: new Float32Array(Math.max(c.dim, qDim)),
    xb2: new Float32Array(c.dim),
    hb: new Float32Array(c.hiddenDim),
    hb2: new Float32Array(c.hiddenDim),
    q: new Float32Array(qDim),
    k: new Float32Array(kvDim),
    v: new Float32Array(kvDim),
    logits: new Float32Array(c.vocabSize),
    keyCache: new Float32Array(c.nLayers * c.seqLen * kvDim),
    valueCache: new Float32Array(c.nLayers * c.seqLen * kvDim),
    rope: ropeTables(c.headSize, c.seqLen, c.ropeTheta, c.ropeScaling, trig),
    kvCache,
  };
}

/** One token at one position through the whole model; returns the logits (a view into state). */
export function forward(model: ReferenceModel, s: RunState, token: number, pos: number): Float32Array {
  const c = model.config;
  const w = model.weights;
  const { dim, hiddenDim, headSize, nHeads, nKvHeads } = c;
  const qDim = nHeads * headSize;
  const kvDim = nKvHeads * headSize;
  const positions = Int32Array.of(pos);
  const x = s.x;

  // copy the token embedding into x
  embed(x, w.tokenEmbeddingTable, [token], dim);

  for (let l = 0; l < c.nLayers; l++) {
    // attention rmsnorm
    rmsnorm(s.xb, x, w.rmsAttWeight.subarray(l * dim, (l + 1) * dim), 1, dim, c.normEps);

    // qkv matmuls for this position
    matmul(s.q, s.xb, w.wq.subarray(l * qDim * dim, (l + 1) * qDim * dim), 1, dim, qDim);
    matmul(s.k, s.xb, w.wk.subarray(l * kvDim * dim, (l + 1) * kvDim * dim), 1, dim, kvDim);
    matmul(s.v, s.xb, w.wv.subarray(l * kvDim * dim, (l + 1) * kvDim * dim), 1, dim, kvDim);
    if (w.bq && w.bk && w.bv) {
      add(s.q, w.bq.subarray(l * qDim, (l + 1) * qDim), qDim);
      add(s.k, w.bk.subarray(l * kvDim, (l + 1) * kvDim), kvDim);
      add(s.v, w.bv.subarray(l * kvDim, (l + 1) * kvDim), kvDim);
    }

    // per-head q/k RMSNorm (Qwen3)
    if (w.qNorm && w.kNorm) {
      headNorm(s.q, 1, qDim, nHeads, headSize, w.qNorm.subarray(l * headSize, (l + 1) * headSize), c.normEps);
      headNorm(s.k, 1, kvDim, nKvHeads, headSize, w.kNorm.subarray(l * headSize, (l + 1) * headSize), c.normEps);
    }

    // RoPE: rotate q and k by position
    rope(s.q, 1, nHeads, headSize, positions, s.rope, c.ropeStyle);
    rope(s.k, 1, nKvHeads, headSize, positions, s.rope, c.ropeStyle);

    // save key and value at this time step (pos) in the layer's cache (an f16 cache rounds them)
    const layerCache = l * c.seqLen * kvDim;
    if (s.kvCache === 'f16') {
      roundToF16(s.k);
      roundToF16(s.v);
    }
    s.keyCache.set(s.k, layerCache + pos * kvDim);
    s.valueCache.set(s.v, layerCache + pos * kvDim);

    // multi-head attention over positions 0..pos; query head h uses kv head h / kv_mul
    const kCache = s.keyCache.subarray(layerCache, layerCache + c.seqLen * kvDim);
    const vCache = s.valueCache.subarray(layerCache, layerCache + c.seqLen * kvDim);
    attention(s.xb, s.q, kCache, vCache, 1, positions, nHeads, nKvHeads, headSize, kvDim);

    // output projection, then the residual
    matmul(s.xb2, s.xb, w.wo.subarray(l * dim * qDim, (l + 1) * dim * qDim), 1, qDim, dim);
    if (w.bo) add(s.xb2, w.bo.subarray(l * dim, (l + 1) * dim), dim);
    add(x, s.xb2, dim);

    // ffn rmsnorm
    rmsnorm(s.xb, x, w.rmsFfnWeight.subarray(l * dim, (l + 1) * dim), 1, dim, c.normEps);

    // w2(silu(w1(x)) * w3(x)), then the residual
    matmul(s.hb, s.xb, w.w1.subarray(l * hiddenDim * dim, (l + 1) * hiddenDim * dim), 1, dim, hiddenDim);
    matmul(s.hb2, s.xb, w.w3.subarray(l * hiddenDim * dim, (l + 1) * hiddenDim * dim), 1, dim, hiddenDim);
    siluMul(s.hb, s.hb, s.hb2, hiddenDim);
    matmul(s.xb, s.hb, w.w2.subarray(l * dim * hiddenDim, (l + 1) * dim * hiddenDim), 1, hiddenDim, dim);
    add(x, s.xb, dim);
  }

  // final rmsnorm (in place, as run.c), then the classifier into logits
  rmsnorm(x, x, w.rmsFinalWeight, 1, dim, c.normEps);
  matmul(s.logits, x, w.wcls, 1, dim, c.vocabSize);
  return s.logits;
}

/**
 * run.c's `generate` loop: feeds the prompt tokens, then `pick`'s choices, for `steps`
 * positions in total (0 or more than seq_len means seq_len), stopping when BOS is picked.
 * Returns every token fed or picked, starting with promptTokens[0] (usually BOS).
 */
export function generate(
  model: ReferenceModel, promptTokens: readonly number[], steps: number, pick: (logits: Float32Array) => number,
  kvCache: ReferenceKvCache = 'f32',
): number[] {
  const state = createRunState(model.config, kvCache);
  return generateLoop(model.config.seqLen, promptTokens, steps, (token, pos) => forward(model, state, token, pos), pick);
}

/** The loop of `generate` over any forward pass (the f32 oracle, runq.c's Q8 one). */
export function generateLoop(
  seqLen: number, promptTokens: readonly number[], steps: number,
  forwardStep: (token: number, pos: number) => Float32Array, pick: (logits: Float32Array) => number,
): number[] {
  if (promptTokens.length < 1) throw new RangeError('generate needs at least one prompt token (BOS)');
  if (steps <= 0 || steps > seqLen) steps = seqLen;
  const out = [promptTokens[0]!];
  let token = promptTokens[0]!;
  for (let pos = 0; pos < steps; pos++) {
    const logits = forwardStep(token, pos);
    const next = pos < promptTokens.length - 1 ? promptTokens[pos + 1]! : pick(logits);
    if (next === 1) break; // BOS delimits sequences
    out.push(next);
    token = next;
  }
  return out;
}
