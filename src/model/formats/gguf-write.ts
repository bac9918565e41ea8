/**
 * Writes Llama, Qwen2 and Qwen3 GGUF files (tests, `synth --format gguf`): llama.cpp's names and
 * metadata keys, tensors in F32, F16, Q8_0 or Q4_0 by ggml's quantisation rules (gguf-blocks.ts),
 * or in llama-quantize's Q4_K_M, Q5_K_M and Q6_K mixes (gguf-mix.ts, gguf-kquants-write.ts),
 * a SentencePiece tokenizer from llama2.c's or any `tokenizer.ggml.*` keys (`ggufBpeKv`).
 * A config with q/k/v biases is written as `qwen2` and one with per-head q/k norms as `qwen3`
 * (rotate_half rows, as their converter keeps them), one with neither as `llama` (interleaved
 * rows); RoPE divisors become `rope_freqs.weight`.
 *
 * The metadata section is serialised by `@huggingface/gguf` (`serializeGgufMetadata`); the
 * library has no tensor-info writer, so the tensor infos (name, dims, type, offset) and the
 * aligned data layout are written here.
 */
import { GGUFValueType, serializeGgufMetadata, type GGUFTypedMetadata, type MetadataValue } from '@huggingface/gguf';
import type { ModelConfig } from '../config.js';
import type { ReferenceModel } from '../reference.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';
import { ggufTokenizerMetadata } from '../tokenizer/gguf-tokenizer.js';
import { GGML_BLOCK, GGML_TYPE_ID, ggmlBytes, type GgmlType } from './gguf-blocks.js';
import { quantizeAny } from './gguf-kquants-write.js';
import { ggufMixType, isGgufMix, MIX_FILE_TYPE, GGUF_MIXES, type GgufMix } from './gguf-mix.js';
import { ggufName, ROPE_FREQS } from './gguf.js';
import { expectedShapes } from './hf.js';

/** One type for every matrix. */
type GgufPlain = 'f32' | 'f16' | 'q8_0' | 'q4_0';
/** What `synth --format gguf --quant` and the tests write the matrices as: one type, or a K-quant mix. */
export type GgufQuant = GgufPlain | GgufMix;
export const GGUF_QUANTS: readonly GgufQuant[] = ['f32', 'f16', 'q8_0', 'q4_0', ...GGUF_MIXES];

const QUANT_TYPE: Readonly<Record<GgufPlain, GgmlType>> = { f32: 'F32', f16: 'F16', q8_0: 'Q8_0', q4_0: 'Q4_0' };
/** general.file_type (llama_ftype) of a file written with each quant. */
const FILE_TYPE: Readonly<Record<GgufQuant, number>> = { f32: 0, f16: 1, q4_0: 2, q8_0: 7, ...MIX_FILE_TYPE };
const ALIGNMENT = 32;

export type GgufKv = Record<string, { value: MetadataValue; type: GGUFValueType; subType?: GGUFValueType }>;

/** One tensor to write: GGUF name, dims with ne[0] (the row length) first, ggml type. */
export interface GgufTensorOut {
  name: string;
  dims: number[];
  type: GgmlType | number;
  byteLength: number;
}

/**
 * The type a tensor is written as: norms stay F32 (as llama.cpp keeps them); a matrix whose
 * rows do not split into blocks of 32 falls back to F16, as llama-quantize does.
 */
export function ggufTensorType(quant: GgufPlain, shape: readonly [number, number]): GgmlType {
  const type = QUANT_TYPE[quant];
  if (shape[0] === 1 || shape[1] === 1) return 'F32';
  if ((type === 'Q8_0' || type === 'Q4_0') && shape[1] % 32 !== 0) return 'F16';
  return type;
}

/** A tensor's info as written (`name` already its GGUF name): vectors (norms, biases) have one dimension, matrices ne[0] = cols first. */
export function ggufTensorOut(t: { name: string; shape: readonly [number, number]; type: GgmlType }): GgufTensorOut & { type: GgmlType } {
  const [rows, cols] = t.shape;
  return { name: t.name, dims: rows === 1 || cols === 1 ? [rows * cols] : [cols, rows], type: t.type, byteLength: ggmlBytes(t.type, rows * cols) };
}

/** The model's tensors in llama.cpp's order (plan names, [rows, cols], type). */
export function ggufTensorPlan(c: ModelConfig, quant: GgufQuant): { name: string; shape: [number, number]; type: GgmlType }[] {
  const shapes = expectedShapes(c);
  const names = ['tok_embeddings'];
  for (let l = 0; l < c.nLayers; l++) {
    const attn = c.qkvBias ? ['attention.wq', 'attention.bq', 'attention.wk', 'attention.bk', 'attention.wv', 'attention.bv'] : ['attention.wq', 'attention.wk', 'attention.wv'];
    const qkNorm = c.qkNorm ? ['attention.q_norm', 'attention.k_norm'] : [];
    for (const k of ['attention_norm', ...attn, ...qkNorm, 'attention.wo', 'ffn_norm', 'feed_forward.w1', 'feed_forward.w3', 'feed_forward.w2']) names.push(`layers.${l}.${k}`);
  }
  names.push('norm');
  if (!c.sharedClassifier) names.push('output');
  return names.map((name) => {
    const shape = shapes.get(name)!;
    return { name, shape, type: isGgufMix(quant) ? ggufMixType(quant, name, shape, c) : ggufTensorType(quant, shape) };
  });
}

const u32 = (value: number) => ({ value, type: GGUFValueType.UINT32 });
const f32 = (value: number) => ({ value, type: GGUFValueType.FLOAT32 });
const str = (value: string) => ({ value, type: GGUFValueType.STRING });
const strings = (value: string[]) => ({ value, type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING });

/** The GGUF architecture a config is written as: `qwen2` has q/k/v biases, `qwen3` q/k norms (both rotate_half rows), `llama` neither. */
export function ggufArchitecture(c: ModelConfig): 'llama' | 'qwen2' | 'qwen3' {
  if (c.qkvBias && c.qkNorm) throw new RangeError('no GGUF architecture written here has both q/k/v biases and q/k norms');
  const arch = c.qkvBias ? 'qwen2' : c.qkNorm ? 'qwen3' : 'llama';
  const want = arch === 'llama' ? 'interleaved' : 'rotate_half';
  if (c.ropeStyle !== want) throw new RangeError(`a ${arch} GGUF stores q/k rows in ${want} order; the config has ${c.ropeStyle}`);
  if (c.outBias) throw new RangeError('no GGUF architecture written here has an o_proj bias');
  if (c.ropeScaling?.type === 'llama3') throw new RangeError('GGUF stores RoPE scaling as rope_freqs divisors: pass ropeScaling {type: "factors"}');
  return arch;
}

/** llama.cpp's metadata of a model with this config, and its tokenizer (llama2.c's, or `tokenizer.ggml.*` keys) when given. */
export function ggufMetadata(c: ModelConfig, quant: GgufQuant, tokenizer?: Tokenizer | GgufKv, name = 'webgpu-tp'): GgufKv {
  const arch = ggufArchitecture(c);
  const kv: GgufKv = {
    'general.architecture': str(arch),
    'general.name': str(name),
    'general.file_type': u32(FILE_TYPE[quant]),
    [`${arch}.context_length`]: u32(c.seqLen),
    [`${arch}.embedding_length`]: u32(c.dim),
    [`${arch}.feed_forward_length`]: u32(c.hiddenDim),
    [`${arch}.block_count`]: u32(c.nLayers),
    [`${arch}.attention.head_count`]: u32(c.nHeads),
    [`${arch}.attention.head_count_kv`]: u32(c.nKvHeads),
    [`${arch}.rope.dimension_count`]: u32(c.headSize),
    [`${arch}.attention.layer_norm_rms_epsilon`]: f32(c.normEps),
    [`${arch}.rope.freq_base`]: f32(c.ropeTheta),
  };
  if (c.headSize !== c.dim / c.nHeads) kv[`${arch}.attention.key_length`] = u32(c.headSize);
  if (tokenizer && !(tokenizer instanceof Tokenizer)) Object.assign(kv, tokenizer);
  else if (tokenizer) {
    const t = ggufTokenizerMetadata(tokenizer);
    kv['tokenizer.ggml.model'] = { value: 'llama', type: GGUFValueType.STRING };
    kv['tokenizer.ggml.tokens'] = { value: t.tokens, type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING };
    kv['tokenizer.ggml.scores'] = { value: t.scores, type: GGUFValueType.ARRAY, subType: GGUFValueType.FLOAT32 };
    kv['tokenizer.ggml.token_type'] = { value: t.types, type: GGUFValueType.ARRAY, subType: GGUFValueType.INT32 };
    kv['tokenizer.ggml.bos_token_id'] = u32(1);
    kv['tokenizer.ggml.eos_token_id'] = u32(2);
    kv['tokenizer.ggml.unknown_token_id'] = u32(0);
  }
  return kv;
}

const pad = (n: number) => Math.ceil(n / ALIGNMENT) * ALIGNMENT;

/**
 * The header (magic, version 3, metadata, tensor infos, padding) and each tensor's absolute
 * data offset; tensors follow one another, each padded to the 32-byte alignment.
 */
export function ggufHeader(kv: GgufKv, tensors: readonly GgufTensorOut[]): { header: Uint8Array; offsets: number[]; fileSize: number } {
  const typed = {
    version: { value: 3, type: GGUFValueType.UINT32 },
    tensor_count: { value: BigInt(tensors.length), type: GGUFValueType.UINT64 },
    kv_count: { value: BigInt(Object.keys(kv).length), type: GGUFValueType.UINT64 },
    ...kv,
  } as GGUFTypedMetadata;
  const meta = serializeGgufMetadata(typed, { alignment: 1 });
  const enc = new TextEncoder();
  const infos: Uint8Array[] = [];
  let rel = 0;
  const relOffsets: number[] = [];
  for (const t of tensors) {
    const name = enc.encode(t.name);
    const b = new Uint8Array(8 + name.byteLength + 4 + 8 * t.dims.length + 4 + 8);
    const v = new DataView(b.buffer);
    let o = 0;
    v.setBigUint64(o, BigInt(name.byteLength), true);
    b.set(name, 8);
    o = 8 + name.byteLength;
    v.setUint32(o, t.dims.length, true);
    o += 4;
    for (const d of t.dims) {
      v.setBigUint64(o, BigInt(d), true);
      o += 8;
    }
    v.setUint32(o, typeof t.type === 'number' ? t.type : GGML_TYPE_ID[t.type], true);
    v.setBigUint64(o + 4, BigInt(rel), true);
    relOffsets.push(rel);
    rel = pad(rel + t.byteLength);
    infos.push(b);
  }
  const used = meta.byteLength + infos.reduce((n, b) => n + b.byteLength, 0);
  const header = new Uint8Array(pad(used));
  header.set(meta);
  let o = meta.byteLength;
  for (const b of infos) {
    header.set(b, o);
    o += b.byteLength;
  }
  const last = tensors.length ? relOffsets.at(-1)! + tensors.at(-1)!.byteLength : 0;
  return { header, offsets: relOffsets.map((r) => header.byteLength + r), fileSize: header.byteLength + last };
}

/** A byte-level BPE tokenizer's `tokenizer.ggml.*` keys, as convert_hf_to_gguf.py writes them. */
export interface GgufBpeTokenizer {
  tokens: string[];
  /** llama_token_type per token (1 normal, 3 control, 4 user-defined, 5 unused). */
  types: number[];
  /** "a b": the pair a, b merges, highest priority first. */
  merges: string[];
  pre: string;
  bos?: number;
  eos?: number;
  eot?: number;
  addBos?: boolean;
  addEos?: boolean;
  chatTemplate?: string;
}

export function ggufBpeKv(t: GgufBpeTokenizer): GgufKv {
  const kv: GgufKv = {
    'tokenizer.ggml.model': str('gpt2'),
    'tokenizer.ggml.pre': str(t.pre),
    'tokenizer.ggml.tokens': strings(t.tokens),
    'tokenizer.ggml.token_type': { value: t.types, type: GGUFValueType.ARRAY, subType: GGUFValueType.INT32 },
    'tokenizer.ggml.merges': strings(t.merges),
  };
  for (const [key, id] of [['bos', t.bos], ['eos', t.eos], ['eot', t.eot]] as const) if (id !== undefined) kv[`tokenizer.ggml.${key}_token_id`] = u32(id);
  if (t.addBos !== undefined) kv['tokenizer.ggml.add_bos_token'] = { value: t.addBos, type: GGUFValueType.BOOL };
  if (t.addEos !== undefined) kv['tokenizer.ggml.add_eos_token'] = { value: t.addEos, type: GGUFValueType.BOOL };
  if (t.chatTemplate !== undefined) kv['tokenizer.chat_template'] = str(t.chatTemplate);
  return kv;
}

/** Plan name → the rows of a reference model's stacked weights it covers. */
export function referenceTensor(m: ReferenceModel, name: string): Float32Array {
  const w = m.weights;
  const c = m.config;
  if (name === 'tok_embeddings') return w.tokenEmbeddingTable;
  if (name === 'norm') return w.rmsFinalWeight;
  if (name === 'output') return w.wcls;
  const [, l, kind] = /^layers\.(\d+)\.(.+)$/.exec(name)!;
  const stacked: Record<string, Float32Array> = {
    attention_norm: w.rmsAttWeight, ffn_norm: w.rmsFfnWeight, 'attention.wq': w.wq, 'attention.wk': w.wk, 'attention.wv': w.wv,
    'attention.wo': w.wo, 'feed_forward.w1': w.w1, 'feed_forward.w2': w.w2, 'feed_forward.w3': w.w3,
    ...(w.bq && w.bk && w.bv ? { 'attention.bq': w.bq, 'attention.bk': w.bk, 'attention.bv': w.bv } : {}),
    ...(w.qNorm && w.kNorm ? { 'attention.q_norm': w.qNorm, 'attention.k_norm': w.kNorm } : {}),
  };
  const all = stacked[kind!];
  if (!all) throw new RangeError(`the reference model has no ${name}`);
  const per = all.length / c.nLayers;
  return all.subarray(Number(l) * per, (Number(l) + 1) * per);
}

/**
 * A whole model as one GGUF file in memory (tests; stories260K-sized models). `typeOf`, given,
 * picks each matrix's type by its plan name instead of `quant` (whose file_type the file keeps),
 * F16 where its rows are not whole blocks of that type.
 */
export function encodeGguf(model: ReferenceModel, quant: GgufQuant, tokenizer?: Tokenizer | GgufKv, typeOf?: (name: string) => GgmlType): Uint8Array {
  const c = model.config;
  const plan = ggufTensorPlan(c, quant).map((t) => {
    const vector = t.shape[0] === 1 || t.shape[1] === 1;
    const want = typeOf && !vector ? typeOf(t.name) : t.type;
    const type: GgmlType = t.shape[1] % GGML_BLOCK[want].values === 0 ? want : 'F16';
    return { ...t, type, values: referenceTensor(model, t.name), name: ggufName(t.name) };
  });
  // The converter writes the divisors first, before the model's own tensors.
  if (c.ropeScaling?.type === 'factors') plan.unshift({ name: ROPE_FREQS, shape: [1, c.headSize / 2], type: 'F32', values: Float32Array.from(c.ropeScaling.factors) });
  const { header, offsets, fileSize } = ggufHeader(ggufMetadata(c, quant, tokenizer), plan.map(ggufTensorOut));
  const out = new Uint8Array(fileSize);
  out.set(header);
  plan.forEach((t, i) => out.set(quantizeAny(t.type, t.values), offsets[i]));
  return out;
}
