/**
 * A Hugging Face checkpoint (config.json + one or more safetensors files) laid out for the plan.
 *
 * HF names map onto the plan's names (`model.layers.3.self_attn.q_proj.weight` →
 * `layers.3.attention.wq`). Linear weights are already [out, in], and HF's q/k rows are in
 * rotate_half order, which the kernels run as they are (ModelConfig.ropeStyle): nothing is
 * permuted at load.
 *
 * The weights may be f16/bf16 and spread over several files, while the plan, the router and the
 * shard cache work on one byte stream. So the tensors are placed, in file order, in a virtual
 * file: `tensors` carry offsets in it, and `segments` say where each one's bytes really are, so
 * a converting source (src/loader/converted-source.ts) can produce that stream from the real
 * files in one pass. F16 matrices stay f16 in it (their halves as stored: the `f16` dtype the
 * kernels read packed); everything else, bf16 included, becomes f32.
 */
import { ModelFormatError } from '../../errors.js';
import type { ModelConfig, TensorInfo } from '../config.js';
import { DTYPE_BYTES, type SafetensorsDtype, type SafetensorsFile } from './safetensors.js';

/** Where one tensor's bytes are in the real files, in virtual-file order. */
export interface Segment {
  /** Index into the model's file list. */
  file: number;
  /** Byte offset in that file. */
  offset: number;
  byteLength: number;
  dtype: SafetensorsDtype;
  /** The stream carries the stored halves as they are (an F16 matrix kept f16), not f32. */
  keep?: boolean;
}

export interface HfLayout {
  /** Offsets in the virtual file. */
  tensors: TensorInfo[];
  /** One per stored tensor the model uses, ordered by (file, offset); the virtual file is their stream bytes back to back. */
  segments: Segment[];
  /** Bytes of the virtual file. */
  f32Bytes: number;
}

const LAYER_NAMES: Record<string, string> = {
  'input_layernorm.weight': 'attention_norm',
  'self_attn.q_proj.weight': 'attention.wq',
  'self_attn.k_proj.weight': 'attention.wk',
  'self_attn.v_proj.weight': 'attention.wv',
  'self_attn.o_proj.weight': 'attention.wo',
  'self_attn.q_proj.bias': 'attention.bq',
  'self_attn.k_proj.bias': 'attention.bk',
  'self_attn.v_proj.bias': 'attention.bv',
  'self_attn.o_proj.bias': 'attention.bo',
  'self_attn.q_norm.weight': 'attention.q_norm',
  'self_attn.k_norm.weight': 'attention.k_norm',
  'post_attention_layernorm.weight': 'ffn_norm',
  'mlp.gate_proj.weight': 'feed_forward.w1',
  'mlp.down_proj.weight': 'feed_forward.w2',
  'mlp.up_proj.weight': 'feed_forward.w3',
};

/** Stored tensors a model may carry that no kernel needs (precomputed RoPE frequencies). */
const IGNORED = /^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$/;

/** The plan name of an HF tensor name, or undefined for names that are not part of a Llama. */
export function planName(hfName: string): string | undefined {
  if (hfName === 'model.embed_tokens.weight') return 'tok_embeddings';
  if (hfName === 'model.norm.weight') return 'norm';
  if (hfName === 'lm_head.weight') return 'output';
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hfName);
  const kind = m ? LAYER_NAMES[m[2]!] : undefined;
  return kind ? `layers.${Number(m![1])}.${kind}` : undefined;
}

/** The HF name of a plan name (fixtures write checkpoints with it). */
export function hfName(name: string): string {
  if (name === 'tok_embeddings') return 'model.embed_tokens.weight';
  if (name === 'norm') return 'model.norm.weight';
  if (name === 'output') return 'lm_head.weight';
  const m = /^layers\.(\d+)\.(.+)$/.exec(name);
  const entry = m ? Object.entries(LAYER_NAMES).find(([, v]) => v === m[2]) : undefined;
  if (!entry) throw new RangeError(`no HF name for ${name}`);
  return `model.layers.${m![1]}.${entry[0]}`;
}

/** [out, in] of every tensor the config implies (norms and biases as one row/column). */
export function expectedShapes(c: ModelConfig): Map<string, [number, number]> {
  const q = c.nHeads * c.headSize;
  const kv = c.nKvHeads * c.headSize;
  const out = new Map<string, [number, number]>([['tok_embeddings', [c.vocabSize, c.dim]]]);
  for (let l = 0; l < c.nLayers; l++) {
    const p = `layers.${l}.`;
    out.set(`${p}attention_norm`, [1, c.dim]);
    out.set(`${p}attention.wq`, [q, c.dim]);
    out.set(`${p}attention.wk`, [kv, c.dim]);
    out.set(`${p}attention.wv`, [kv, c.dim]);
    if (c.qkvBias) {
      // Biases split with their matrix's rows: one column, one row per output.
      out.set(`${p}attention.bq`, [q, 1]);
      out.set(`${p}attention.bk`, [kv, 1]);
      out.set(`${p}attention.bv`, [kv, 1]);
    }
    if (c.qkNorm) {
      // One weight of head_size for every head (Qwen3), replicated like the other norms.
      out.set(`${p}attention.q_norm`, [1, c.headSize]);
      out.set(`${p}attention.k_norm`, [1, c.headSize]);
    }
    out.set(`${p}attention.wo`, [c.dim, q]);
    if (c.outBias) out.set(`${p}attention.bo`, [1, c.dim]);
    out.set(`${p}ffn_norm`, [1, c.dim]);
    out.set(`${p}feed_forward.w1`, [c.hiddenDim, c.dim]);
    out.set(`${p}feed_forward.w2`, [c.dim, c.hiddenDim]);
    out.set(`${p}feed_forward.w3`, [c.hiddenDim, c.dim]);
  }
  out.set('norm', [1, c.dim]);
  if (!c.sharedClassifier) out.set('output', [c.vocabSize, c.dim]);
  return out;
}

/**
 * Lays out a model from its config and its files' parsed headers (`files[i]` is file i of the
 * model: one model.safetensors, or the index's shards in order). Every tensor the config needs
 * must be present once with its expected shape; unknown tensors are an error (they would be
 * silently ignored weights of an architecture we do not run).
 */
export function layoutHfModel(c: ModelConfig, files: readonly { name: string; header: SafetensorsFile }[]): HfLayout {
  const want = expectedShapes(c);
  const found: { name: string; file: number; offset: number; byteLength: number; dtype: SafetensorsDtype; shape: [number, number] }[] = [];
  const seen = new Map<string, string>();
  files.forEach((f, fi) => {
    for (const t of f.header.tensors) {
      if (IGNORED.test(t.name)) continue;
      const name = planName(t.name);
      if (name === undefined) {
        throw new ModelFormatError(`${f.name}: tensor "${t.name}" is not part of a Llama/Mistral/Qwen2/Qwen3 model`, 'Check config.json\'s architectures against the weights');
      }
      // A tied model may still store lm_head.weight (a copy of the embedding): it is not read.
      if (name === 'output' && c.sharedClassifier) continue;
      const shape = want.get(name);
      if (!shape) throw new ModelFormatError(`${f.name}: tensor "${t.name}" is not expected by config.json`, 'Check config.json (e.g. tie_word_embeddings, the number of layers) against the weights');
      if (seen.has(name)) throw new ModelFormatError(`tensor "${t.name}" is stored twice (${seen.get(name)} and ${f.name})`);
      seen.set(name, f.name);
      const elements = t.shape.reduce((n, d) => n * d, 1);
      const matches = t.shape.length === 2 ? t.shape[0] === shape[0] && t.shape[1] === shape[1] : t.shape.length === 1 && elements === shape[0] * shape[1];
      if (!matches) {
        const expect = shape[0] === 1 || shape[1] === 1 ? `[${shape[0] * shape[1]}]` : `[${shape.join(', ')}]`;
        throw new ModelFormatError(`${f.name}: tensor "${t.name}" has shape [${t.shape.join(', ')}], config.json implies ${expect}`, 'Check config.json against the weights');
      }
      found.push({ name, file: fi, offset: t.offset, byteLength: t.byteLength, dtype: t.dtype, shape });
    }
  });
  const missing = [...want.keys()].filter((n) => !seen.has(n));
  if (missing.length) {
    const names = missing.slice(0, 3).map(hfName).join(', ');
    throw new ModelFormatError(`the weights lack ${missing.length} tensor(s) config.json implies: ${names}${missing.length > 3 ? ', ...' : ''}`, 'Check that every shard is present and config.json belongs to these weights');
  }
  found.sort((a, b) => a.file - b.file || a.offset - b.offset);
  const tensors: TensorInfo[] = [];
  const segments: Segment[] = [];
  let v = 0;
  for (const t of found) {
    // A matrix (not a norm, not a bias) of even rows: its halves pair up in u32 words.
    const keep = t.dtype === 'F16' && t.shape[0] > 1 && t.shape[1] > 1 && t.shape[1] % 2 === 0;
    const byteLength = keep ? t.byteLength : (t.byteLength / DTYPE_BYTES[t.dtype]) * 4;
    tensors.push({ name: t.name, offset: v, shape: t.shape, dtype: keep ? 'f16' : 'f32', byteLength });
    segments.push({ file: t.file, offset: t.offset, byteLength: t.byteLength, dtype: t.dtype, ...(keep && { keep }) });
    v += byteLength;
  }
  if (c.sharedClassifier) {
    const emb = tensors.find((t) => t.name === 'tok_embeddings')!;
    tensors.push({ ...emb, name: 'output', aliasOf: 'tok_embeddings' });
  }
  return { tensors, segments, f32Bytes: v };
}
