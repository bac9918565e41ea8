/**
 * A rank's weights on its WebGPU device, the way run.c's TransformerWeights reads: one field per
 * matrix, with its shard's shape. Shapes carry the shard: `heads/tp` means this rank's query
 * heads (and so on).
 */
import type { ModelConfig } from '../src/model/config.js';
import { rankDims, type RankPlan } from '../src/parallel/plan.js';
import type { GpuContext } from '../src/gpu/core/device.js';
import { createMatrix, destroyMatrix, createStorageBuffer, writeMatrixRows, type Matrix } from '../src/gpu/core/buffers.js';
import { createQuantMatrix, destroyQuantMatrix, isQuantMatrix, writeQuantRows, type QuantMatrix } from '../src/gpu/core/quant-matrix.js';
import { createHalfMatrix, destroyHalfMatrix, isHalfMatrix, writeHalfRows, type HalfMatrix } from '../src/gpu/core/half-matrix.js';
import { commonForm, shardViews, sliceValues } from './slice-views.js';

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
  qkNorm?: GPUBuffer; // (2·head_size,) replicated: q_norm, then k_norm (Qwen3)
  wo: Weight; // (dim, heads/tp·head_size): this rank's columns of wo
  bo?: GPUBuffer; // (dim,) replicated: added once, to the all-reduced Wo·att
  ffnNorm: GPUBuffer; // (dim,)
  w13: Weight; // (2·hidden/tp, dim): w1 rows, then w3 rows
  w2: Weight; // (dim, hidden/tp): this rank's columns of w2
}

/**
 * Uploads a rank's packed shard (its slices, dense, one after the other in plan order) into
 * GPU buffers, fusing wq|wk|wv and w1|w3 into one matrix each so each is one matmul. Q8_0 and
 * Q4_0 slices stay quantised (values and scales, as the plan packs them); parts of one fused
 * matrix stored in different dtypes meet in a common one (`commonForm`).
 */
export function createShardWeights(ctx: GpuContext, c: ModelConfig, r: RankPlan, packed: ArrayBuffer): ShardWeights {
  const d = rankDims(c, r);
  const { view, f32: get } = shardViews(r, packed);
  const matrix = (rows: number, cols: number, label: string, names: string[]): Weight => {
    // commonForm leaves every part in one dtype and group size, so the parts fuse row after row.
    const parts = commonForm(names.map(view));
    const first = parts[0]!;
    const m = first.dtype === 'f16' ? createHalfMatrix(ctx, rows, cols, label)
      : first.dtype === 'f32' ? createMatrix(ctx, rows, cols, label)
      : createQuantMatrix(ctx, rows, cols, first.groupSize, label, first.dtype);
    let row = 0;
    for (const p of parts) {
      if (p.dtype === 'f16') writeHalfRows(ctx, m as HalfMatrix, row, p.h);
      else if (p.dtype === 'f32') writeMatrixRows(ctx, m as Matrix, row, p.f);
      else writeQuantRows(ctx, m as QuantMatrix, row, p.q, p.s);
      row += sliceValues(p) / cols;
    }
    return m;
  };
  const layers: LayerWeights[] = [];
  /** Vectors back to back: column-parallel biases in their matrices' order, or the q and k norms. */
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
      ...(c.qkNorm ? { qkNorm: fusedBias(`${p}qk_norm`, [get(`${p}attention.q_norm`), get(`${p}attention.k_norm`)]) } : {}),
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
    l.qkNorm?.destroy();
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
