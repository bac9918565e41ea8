/**
 * Writes a model as a Hugging Face checkpoint: `config.json` and `model.safetensors` (or shards
 * and `model.safetensors.index.json`), with HF tensor names. Tests use it to build HF models
 * from llama2.c ones and from random weights, since nothing can be downloaded here.
 *
 * llama2.c's q/k rows rotate interleaved pairs (2i, 2i+1); HF's rotate (i, i + head/2). As
 * transformers' convert_llama_weights_to_hf.py does, q and k rows are permuted per head so that
 * the rotate_half model computes exactly the same function.
 */
import type { ModelConfig } from '../../src/model/config.js';
import type { TransformerWeights } from '../../src/model/reference.js';
import { hfName } from '../../src/model/formats/hf.js';
import { encodeSafetensors, f32ToBf16, type SafetensorsDtype } from '../../src/model/formats/safetensors.js';
import { f32ToF16 } from '../../src/model/formats/gguf-blocks.js';

/**
 * Per head of `rows` rows: new row j < half is old row 2j, new row half + j is old row 2j + 1
 * (HF's `permute`: view(heads, half, 2, cols).transpose(1, 2)).
 */
export function interleavedToRotateHalf(w: Float32Array, heads: number, headSize: number, cols: number): Float32Array {
  const out = new Float32Array(w.length);
  const half = headSize / 2;
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < half; j++) {
      const base = h * headSize;
      out.set(w.subarray((base + 2 * j) * cols, (base + 2 * j + 1) * cols), (base + j) * cols);
      out.set(w.subarray((base + 2 * j + 1) * cols, (base + 2 * j + 2) * cols), (base + half + j) * cols);
    }
  }
  return out;
}

function encodeValues(x: Float32Array, dtype: SafetensorsDtype): Uint8Array {
  if (dtype === 'F32') return new Uint8Array(x.buffer.slice(x.byteOffset, x.byteOffset + x.byteLength));
  const out = new Uint16Array(x.length);
  if (dtype === 'F16') for (let i = 0; i < x.length; i++) out[i] = f32ToF16(x[i]!);
  else if (dtype === 'BF16') for (let i = 0; i < x.length; i++) out[i] = f32ToBf16(x[i]!);
  else throw new RangeError(`writing ${dtype} is not supported`);
  return new Uint8Array(out.buffer);
}

export interface HfExportOptions {
  architecture?: 'LlamaForCausalLM' | 'Qwen2ForCausalLM' | 'Qwen3ForCausalLM' | 'MistralForCausalLM';
  dtype?: SafetensorsDtype;
  /** Split the tensors over this many files with an index (default 1: model.safetensors). */
  shards?: number;
  bosTokenId?: number;
  eosTokenId?: number | number[];
  /** Extra config.json fields. */
  extra?: Record<string, unknown>;
}

/**
 * The files of an HF checkpoint of `config`/`weights` (W[out][in], the oracle's layout). When
 * `config.ropeStyle` is interleaved, q and k rows are permuted to rotate_half order.
 */
export function exportHf(config: ModelConfig, w: TransformerWeights, o: HfExportOptions = {}): Map<string, Uint8Array> {
  const c = config;
  const dtype = o.dtype ?? 'F32';
  const q = c.nHeads * c.headSize;
  const kv = c.nKvHeads * c.headSize;
  const permute = c.ropeStyle === 'interleaved';
  const tensors: { name: string; dtype: SafetensorsDtype; shape: number[]; data: Uint8Array }[] = [];
  const put = (name: string, shape: number[], x: Float32Array) => tensors.push({ name: hfName(name), dtype, shape, data: encodeValues(x, dtype) });
  const layer = (x: Float32Array, l: number, n: number) => x.subarray(l * n, (l + 1) * n);
  put('tok_embeddings', [c.vocabSize, c.dim], w.tokenEmbeddingTable);
  for (let l = 0; l < c.nLayers; l++) {
    const p = `layers.${l}.`;
    put(`${p}attention_norm`, [c.dim], layer(w.rmsAttWeight, l, c.dim));
    const wq = layer(w.wq, l, q * c.dim);
    const wk = layer(w.wk, l, kv * c.dim);
    put(`${p}attention.wq`, [q, c.dim], permute ? interleavedToRotateHalf(wq, c.nHeads, c.headSize, c.dim) : wq);
    put(`${p}attention.wk`, [kv, c.dim], permute ? interleavedToRotateHalf(wk, c.nKvHeads, c.headSize, c.dim) : wk);
    put(`${p}attention.wv`, [kv, c.dim], layer(w.wv, l, kv * c.dim));
    if (w.bq && w.bk && w.bv) {
      const bq = layer(w.bq, l, q);
      const bk = layer(w.bk, l, kv);
      put(`${p}attention.bq`, [q], permute ? interleavedToRotateHalf(bq, c.nHeads, c.headSize, 1) : bq);
      put(`${p}attention.bk`, [kv], permute ? interleavedToRotateHalf(bk, c.nKvHeads, c.headSize, 1) : bk);
      put(`${p}attention.bv`, [kv], layer(w.bv, l, kv));
    }
    if (w.qNorm && w.kNorm) {
      // A norm weight follows its head's dims, so it is permuted as one row of the head.
      const norm = (x: Float32Array) => (permute ? interleavedToRotateHalf(layer(x, l, c.headSize), 1, c.headSize, 1) : layer(x, l, c.headSize));
      put(`${p}attention.q_norm`, [c.headSize], norm(w.qNorm));
      put(`${p}attention.k_norm`, [c.headSize], norm(w.kNorm));
    }
    put(`${p}attention.wo`, [c.dim, q], layer(w.wo, l, c.dim * q));
    if (w.bo) put(`${p}attention.bo`, [c.dim], layer(w.bo, l, c.dim));
    put(`${p}ffn_norm`, [c.dim], layer(w.rmsFfnWeight, l, c.dim));
    put(`${p}feed_forward.w1`, [c.hiddenDim, c.dim], layer(w.w1, l, c.hiddenDim * c.dim));
    put(`${p}feed_forward.w2`, [c.dim, c.hiddenDim], layer(w.w2, l, c.dim * c.hiddenDim));
    put(`${p}feed_forward.w3`, [c.hiddenDim, c.dim], layer(w.w3, l, c.hiddenDim * c.dim));
  }
  put('norm', [c.dim], w.rmsFinalWeight);
  if (!c.sharedClassifier) put('output', [c.vocabSize, c.dim], w.wcls);

  const files = new Map<string, Uint8Array>();
  const architecture = o.architecture ?? (c.qkNorm ? 'Qwen3ForCausalLM' : c.qkvBias ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM');
  const json = {
    architectures: [architecture],
    model_type: { LlamaForCausalLM: 'llama', Qwen2ForCausalLM: 'qwen2', Qwen3ForCausalLM: 'qwen3', MistralForCausalLM: 'mistral' }[architecture],
    hidden_act: 'silu',
    hidden_size: c.dim,
    intermediate_size: c.hiddenDim,
    num_hidden_layers: c.nLayers,
    num_attention_heads: c.nHeads,
    num_key_value_heads: c.nKvHeads,
    head_dim: c.headSize,
    rms_norm_eps: c.normEps,
    rope_theta: c.ropeTheta,
    tie_word_embeddings: c.sharedClassifier,
    vocab_size: c.vocabSize,
    max_position_embeddings: c.seqLen,
    torch_dtype: { F32: 'float32', F16: 'float16', BF16: 'bfloat16' }[dtype],
    ...(o.bosTokenId !== undefined ? { bos_token_id: o.bosTokenId } : {}),
    ...(o.eosTokenId !== undefined ? { eos_token_id: o.eosTokenId } : {}),
    ...(c.outBias ? { attention_bias: true } : {}),
    ...o.extra,
  };
  files.set('config.json', new TextEncoder().encode(JSON.stringify(json, null, 2)));
  const shards = Math.max(1, Math.min(o.shards ?? 1, tensors.length));
  if (shards === 1) {
    files.set('model.safetensors', encodeSafetensors(tensors, { format: 'pt' }));
    return files;
  }
  const weightMap: Record<string, string> = {};
  const per = Math.ceil(tensors.length / shards);
  for (let s = 0; s < shards; s++) {
    const name = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const part = tensors.slice(s * per, (s + 1) * per);
    for (const t of part) weightMap[t.name] = name;
    files.set(name, encodeSafetensors(part, { format: 'pt' }));
  }
  files.set('model.safetensors.index.json', new TextEncoder().encode(JSON.stringify({ metadata: {}, weight_map: weightMap })));
  return files;
}
