/**
 * Writes Llama GGUF files (tests, `synth --format gguf`): llama.cpp's names and metadata keys,
 * tensors in F32, F16, Q8_0 or Q4_0 by ggml's quantisation rules (gguf-blocks.ts).
 *
 * The metadata section is serialised by `@huggingface/gguf` (`serializeGgufMetadata`); the
 * library has no tensor-info writer, so the tensor infos (name, dims, type, offset) and the
 * aligned data layout are written here.
 */
import { GGUFValueType, serializeGgufMetadata, type GGUFTypedMetadata, type MetadataValue } from '@huggingface/gguf';
import type { ModelConfig } from '../config.js';
import type { ReferenceModel } from '../reference.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { ggufTokenizerMetadata } from '../tokenizer/gguf-tokenizer.js';
import { GGML_TYPE_ID, ggmlBytes, quantize, type GgmlType } from './gguf-blocks.js';
import { ggufName } from './gguf.js';
import { expectedShapes } from './hf.js';

/** What `synth --format gguf --quant` and the tests write the matrices as. */
export type GgufQuant = 'f32' | 'f16' | 'q8_0' | 'q4_0';
export const GGUF_QUANTS: readonly GgufQuant[] = ['f32', 'f16', 'q8_0', 'q4_0'];

const QUANT_TYPE: Readonly<Record<GgufQuant, GgmlType>> = { f32: 'F32', f16: 'F16', q8_0: 'Q8_0', q4_0: 'Q4_0' };
/** general.file_type (llama_ftype) of a file written with each quant. */
const FILE_TYPE: Readonly<Record<GgufQuant, number>> = { f32: 0, f16: 1, q4_0: 2, q8_0: 7 };
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
export function ggufTensorType(quant: GgufQuant, shape: readonly [number, number]): GgmlType {
  const type = QUANT_TYPE[quant];
  if (shape[0] === 1) return 'F32';
  if ((type === 'Q8_0' || type === 'Q4_0') && shape[1] % 32 !== 0) return 'F16';
  return type;
}

/** The model's tensors in llama.cpp's order (plan names, [rows, cols], type). */
export function ggufTensorPlan(c: ModelConfig, quant: GgufQuant): { name: string; shape: [number, number]; type: GgmlType }[] {
  const shapes = expectedShapes(c);
  const names = ['tok_embeddings'];
  for (let l = 0; l < c.nLayers; l++) {
    for (const k of ['attention_norm', 'attention.wq', 'attention.wk', 'attention.wv', 'attention.wo', 'ffn_norm', 'feed_forward.w1', 'feed_forward.w3', 'feed_forward.w2']) names.push(`layers.${l}.${k}`);
  }
  names.push('norm');
  if (!c.sharedClassifier) names.push('output');
  return names.map((name) => {
    const shape = shapes.get(name)!;
    return { name, shape, type: ggufTensorType(quant, shape) };
  });
}

/** llama.cpp's metadata of a Llama with this config, and its tokenizer when given. */
export function ggufMetadata(c: ModelConfig, quant: GgufQuant, tokenizer?: Tokenizer, name = 'webgpu-tp'): GgufKv {
  const u32 = (value: number) => ({ value, type: GGUFValueType.UINT32 });
  const f32 = (value: number) => ({ value, type: GGUFValueType.FLOAT32 });
  const kv: GgufKv = {
    'general.architecture': { value: 'llama', type: GGUFValueType.STRING },
    'general.name': { value: name, type: GGUFValueType.STRING },
    'general.file_type': u32(FILE_TYPE[quant]),
    'llama.context_length': u32(c.seqLen),
    'llama.embedding_length': u32(c.dim),
    'llama.feed_forward_length': u32(c.hiddenDim),
    'llama.block_count': u32(c.nLayers),
    'llama.attention.head_count': u32(c.nHeads),
    'llama.attention.head_count_kv': u32(c.nKvHeads),
    'llama.rope.dimension_count': u32(c.headSize),
    'llama.attention.layer_norm_rms_epsilon': f32(c.normEps),
    'llama.rope.freq_base': f32(c.ropeTheta),
  };
  if (c.headSize !== c.dim / c.nHeads) kv['llama.attention.key_length'] = u32(c.headSize);
  if (tokenizer) {
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
  };
  const all = stacked[kind!]!;
  const per = all.length / c.nLayers;
  return all.subarray(Number(l) * per, (Number(l) + 1) * per);
}

/** A whole model as one GGUF file in memory (tests; stories260K-sized models). */
export function encodeGguf(model: ReferenceModel, quant: GgufQuant, tokenizer?: Tokenizer): Uint8Array {
  const plan = ggufTensorPlan(model.config, quant);
  const tensors = plan.map((t) => ({ name: ggufName(t.name), dims: t.shape[0] === 1 ? [t.shape[1]] : [t.shape[1], t.shape[0]], type: t.type, byteLength: ggmlBytes(t.type, t.shape[0] * t.shape[1]) }));
  const { header, offsets, fileSize } = ggufHeader(ggufMetadata(model.config, quant, tokenizer), tensors);
  const out = new Uint8Array(fileSize);
  out.set(header);
  plan.forEach((t, i) => out.set(quantize(t.type, referenceTensor(model, t.name)), offsets[i]));
  return out;
}
