/**
 * GGUF files (llama.cpp's format) of the `llama`, `qwen2` and `qwen3` architectures, laid out for the plan.
 *
 * The header (metadata and tensor infos) is read by gguf-header.ts, in byte ranges of any
 * ByteSource: a URL, a File or a buffer. Hyperparameters come from `<arch>.*` metadata,
 * the tokenizer from `tokenizer.ggml.*` (../tokenizer/gguf-tokenizer.ts, gguf-bpe.ts).
 *
 * The weights are presented as HF checkpoints are (hf.ts): one stream laid out tensor after
 * tensor in file order, produced from the real file in one pass (src/loader/gguf-stream.ts).
 * F32 tensors stay f32 and F16 matrices `f16` (the file's halves as they are; F16 norms become
 * f32, like every vector); Q8_0 matrices become the `q8_0` dtype (int8 plane, then f32
 * scales; groups of 32) and Q4_0 matrices `q4_0` (the 16 nibble bytes of each block in GGML's
 * order, then f32 scales): the kernels' planes, not GGML's interleaved blocks. Q4_1, Q5_0, Q5_1
 * and the K-quants become `q8_m` (a byte code per value, then (scale, min) pairs: gguf-kquants.ts),
 * a K-quant's tensor marked with its super-block of 256, which no split cuts. A quantised norm,
 * or a quantised matrix fused with one stored otherwise (wq|wk|wv, w1|w3), is dequantised to f32.
 *
 * GGUF dims list ne[0], the row length, first: a matrix [out, in] is stored as [in, out]. The
 * RoPE pairing is the converter's: llama.cpp's convert_hf_to_gguf.py permutes a Llama's q/k rows
 * back to Meta's interleaved pairs (llama.cpp's "norm" RoPE), and keeps Qwen2's and Qwen3's in
 * Hugging Face's rotate_half order ("neox"), so Qwen3's per-head q/k norm weights need no permuting. Llama 3.1+ store their RoPE scaling as a `rope_freqs` tensor of
 * per-frequency divisors: read from the file with the header and kept in the config, not streamed.
 */
import { GGMLQuantizationType, type MetadataValue } from '@huggingface/gguf';
import { ModelFormatError } from '../../errors.js';
import type { ModelConfig, TensorInfo } from '../config.js';
import type { ReferenceModel, TransformerWeights } from '../reference.js';
import { dequantize, GGML_BLOCK, ggmlBytes, type GgmlType } from './gguf-blocks.js';
import { AFFINE_GROUP, isAffineType } from './gguf-kquants.js';
import { GGUF_MAGIC, readGgufHeader, toNumber, type GgufHeader, type GgufTensorHeader, type HeadSource } from './gguf-header.js';
import { expectedShapes } from './hf.js';

export { GGUF_MAGIC, readGgufHeader, type GgufHeader, type GgufTensorHeader, type HeadSource } from './gguf-header.js';

/** Where one tensor's bytes are in the file and what the stream makes of them. */
export interface GgufSegment {
  offset: number;
  byteLength: number;
  type: GgmlType;
  /** The stream's dtype for it. */
  dtype: TensorInfo['dtype'];
}

export interface GgufLayout {
  format: 'gguf';
  config: ModelConfig;
  /** Offsets in the converted stream. */
  tensors: TensorInfo[];
  /** In file order, one per stored tensor; the stream is their converted bytes back to back. */
  segments: GgufSegment[];
  /** Bytes of the converted stream. */
  streamBytes: number;
  metadata: Readonly<Record<string, MetadataValue>>;
  /** Where the F32 `rope_freqs` tensor is (headSize / 2 values); its values go into config.ropeScaling. */
  ropeFreqs?: { offset: number; count: number };
}

const TYPES: Readonly<Record<number, GgmlType>> = {
  0: 'F32', 1: 'F16', 2: 'Q4_0', 3: 'Q4_1', 6: 'Q5_0', 7: 'Q5_1', 8: 'Q8_0', 12: 'Q4_K', 13: 'Q5_K', 14: 'Q6_K',
};
const SUPPORTED = 'F32, F16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K';

/** True when `head` starts with the GGUF magic. */
export function isGguf(head: Uint8Array): boolean {
  return head.byteLength >= 4 && new DataView(head.buffer, head.byteOffset, 4).getUint32(0, true) === GGUF_MAGIC;
}

/** Reads the header of `src` (and its `rope_freqs`, a few hundred bytes) and lays out the model. */
export async function readGguf(src: HeadSource): Promise<GgufLayout> {
  const layout = layoutGguf(await readGgufHeader(src), await src.size(), src.name);
  const rf = layout.ropeFreqs;
  if (rf) {
    const end = rf.offset + rf.count * 4;
    const bytes = src.range ? await src.range(rf.offset, end) : (await src.head(end)).subarray(rf.offset, end);
    if (bytes.byteLength !== rf.count * 4) throw new ModelFormatError(`${src.name}: rope_freqs.weight could not be read (${bytes.byteLength} of ${rf.count * 4} bytes)`, 'Re-download the file; it may be truncated');
    const factors = Array.from(new Float32Array(bytes.slice().buffer));
    if (!factors.every((x) => x > 0 && Number.isFinite(x))) throw new ModelFormatError(`${src.name}: rope_freqs.weight holds a value that is not a positive number`, 'The file is damaged; convert the model again');
    layout.config.ropeScaling = { type: 'factors', factors };
  }
  return layout;
}

// ---------------------------------------------------------------------------------------------
// Metadata → ModelConfig
// ---------------------------------------------------------------------------------------------

function metaNumber(m: GgufHeader['metadata'], key: string, file: string, fallback?: number): number {
  const v = m[key];
  if (v === undefined) {
    if (fallback !== undefined) return fallback;
    throw new ModelFormatError(`${file}: GGUF metadata lacks ${key}`, 'Convert the model again with llama.cpp\'s convert_hf_to_gguf.py, which writes every llama.* key');
  }
  const n = typeof v === 'bigint' ? toNumber(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n)) throw new ModelFormatError(`${file}: GGUF metadata ${key} must be a number, got ${String(v)}`);
  return n;
}

function metaCount(m: GgufHeader['metadata'], key: string, file: string, limit: number, fallback?: number): number {
  const n = metaNumber(m, key, file, fallback);
  if (!Number.isInteger(n) || n <= 0 || n > limit) {
    throw new ModelFormatError(`${file}: GGUF metadata ${key} must be a whole number in 1..${limit}, got ${n}`, 'The header is corrupt, or the model is far larger than webgpu-tp supports');
  }
  return n;
}

/** Plan names of GGUF tensor names (`blk.N.<key>`). */
const LAYER_NAMES: Readonly<Record<string, string>> = {
  attn_norm: 'attention_norm',
  attn_q: 'attention.wq',
  attn_k: 'attention.wk',
  attn_v: 'attention.wv',
  attn_output: 'attention.wo',
  ffn_norm: 'ffn_norm',
  ffn_gate: 'feed_forward.w1',
  ffn_down: 'feed_forward.w2',
  ffn_up: 'feed_forward.w3',
  attn_q_norm: 'attention.q_norm',
  attn_k_norm: 'attention.k_norm',
};
const LAYER_BIASES: Readonly<Record<string, string>> = { attn_q: 'attention.bq', attn_k: 'attention.bk', attn_v: 'attention.bv' };

/** llama.cpp's name of the Llama 3.1+ RoPE frequency divisors (one tensor, not per layer). */
export const ROPE_FREQS = 'rope_freqs.weight';

export function ggufPlanName(name: string): string | undefined {
  if (name === 'token_embd.weight') return 'tok_embeddings';
  if (name === 'output_norm.weight') return 'norm';
  if (name === 'output.weight') return 'output';
  const m = /^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$/.exec(name);
  const kind = m ? (m[3] === 'weight' ? LAYER_NAMES : LAYER_BIASES)[m[2]!] : undefined;
  return kind ? `layers.${Number(m![1])}.${kind}` : undefined;
}

/** The GGUF name of a plan name (the writer uses it). */
export function ggufName(name: string): string {
  if (name === 'tok_embeddings') return 'token_embd.weight';
  if (name === 'norm') return 'output_norm.weight';
  if (name === 'output') return 'output.weight';
  const m = /^layers\.(\d+)\.(.+)$/.exec(name);
  for (const [table, suffix] of [[LAYER_NAMES, 'weight'], [LAYER_BIASES, 'bias']] as const) {
    const entry = m ? Object.entries(table).find(([, v]) => v === m[2]) : undefined;
    if (entry) return `blk.${m![1]}.${entry[0]}.${suffix}`;
  }
  throw new RangeError(`no GGUF name for ${name}`);
}

/** The architectures read, and how each one's llama.cpp converter stores it. */
const ARCHITECTURES: Readonly<Record<string, Pick<ModelConfig, 'ropeStyle' | 'qkvBias' | 'qkNorm'>>> = {
  llama: { ropeStyle: 'interleaved' },
  qwen2: { ropeStyle: 'rotate_half', qkvBias: true },
  qwen3: { ropeStyle: 'rotate_half', qkNorm: true },
};
/** How messages name each architecture's models. */
const FAMILY: Readonly<Record<string, string>> = { llama: 'Llama', qwen2: 'Qwen2', qwen3: 'Qwen3' };
const GGUF_ARCHITECTURES = Object.keys(ARCHITECTURES);

/** The ModelConfig of a GGUF's metadata; the vocabulary is token_embd's row count. */
export function ggufConfig(h: GgufHeader, file: string): ModelConfig {
  const m = h.metadata;
  const arch = m['general.architecture'];
  const kind = typeof arch === 'string' ? ARCHITECTURES[arch] : undefined;
  if (!kind) {
    throw new ModelFormatError(`${file}: GGUF architecture "${String(arch)}" is not supported; webgpu-tp runs ${GGUF_ARCHITECTURES.map((a) => `"${a}"`).join(' and ')}`, 'Use a Llama-architecture GGUF (Llama, TinyLlama, SmolLM, Mistral converted as llama), a Qwen2 or Qwen3 one, or the model\'s Hugging Face safetensors');
  }
  const k = (key: string) => `${arch}.${key}`;
  const emb = h.tensors.find((t) => t.name === 'token_embd.weight');
  if (!emb || emb.dims.length !== 2) throw new ModelFormatError(`${file}: the GGUF has no 2-D token_embd.weight tensor`, 'The file is incomplete or not a Llama model');
  const dim = metaCount(m, k('embedding_length'), file, 1 << 16);
  const nHeads = metaCount(m, k('attention.head_count'), file, 1 << 12);
  const nKvHeads = metaCount(m, k('attention.head_count_kv'), file, 1 << 12, nHeads);
  const headSize = metaCount(m, k('attention.key_length'), file, 1 << 12, dim / nHeads);
  const valueLength = metaCount(m, k('attention.value_length'), file, 1 << 12, headSize);
  if (valueLength !== headSize) throw new ModelFormatError(`${file}: key_length ${headSize} and value_length ${valueLength} differ, which attention does not implement`);
  if (!Number.isInteger(headSize) || headSize % 2 !== 0) {
    throw new ModelFormatError(`${file}: the head size must be a whole even number for RoPE, got ${dim}/${nHeads} = ${headSize}`);
  }
  if (nHeads % nKvHeads !== 0) throw new ModelFormatError(`${file}: head_count_kv ${nKvHeads} must divide head_count ${nHeads}`);
  const ropeDims = metaNumber(m, k('rope.dimension_count'), file, headSize);
  if (ropeDims !== headSize) throw new ModelFormatError(`${file}: RoPE over ${ropeDims} of ${headSize} head dims (partial rotary) is not supported`);
  const scaling = m[k('rope.scaling.type')];
  if (scaling !== undefined && scaling !== 'none') {
    throw new ModelFormatError(`${file}: RoPE scaling "${String(scaling)}" in GGUF is not supported (supported: none, and Llama 3's rope_freqs)`, 'Use the model\'s Hugging Face safetensors, or a GGUF without rope.scaling.type');
  }
  const normEps = metaNumber(m, k('attention.layer_norm_rms_epsilon'), file);
  if (!(normEps > 0 && normEps < 1)) throw new ModelFormatError(`${file}: layer_norm_rms_epsilon must be in (0, 1), got ${normEps}`);
  const ropeTheta = metaNumber(m, k('rope.freq_base'), file, 10000);
  if (!(ropeTheta > 0)) throw new ModelFormatError(`${file}: rope.freq_base must be positive, got ${ropeTheta}`);
  const vocabSize = emb.dims[1]!;
  if (!Number.isInteger(vocabSize) || vocabSize <= 0 || vocabSize > 1 << 24) throw new ModelFormatError(`${file}: token_embd.weight has ${vocabSize} rows`, 'The header is corrupt');
  return {
    dim,
    hiddenDim: metaCount(m, k('feed_forward_length'), file, 1 << 20),
    nLayers: metaCount(m, k('block_count'), file, 1024),
    nHeads, nKvHeads, vocabSize,
    seqLen: metaCount(m, k('context_length'), file, 1 << 24),
    headSize,
    sharedClassifier: !h.tensors.some((t) => t.name === 'output.weight'),
    normEps: Math.fround(normEps),
    ropeTheta,
    ...kind,
  };
}

// ---------------------------------------------------------------------------------------------
// Tensor infos → the stream's tensor table
// ---------------------------------------------------------------------------------------------

/** Tensors the kernels fuse into one matrix: they must share a stream dtype, or all be quantised with a q8_m among them. */
const FUSED = [['attention.wq', 'attention.wk', 'attention.wv'], ['feed_forward.w1', 'feed_forward.w3']];

/** Values per scale of a stored type in the stream (q8_m's K-quants keep their sub-blocks). */
const groupOf = (type: GgmlType): number => (isAffineType(type) ? AFFINE_GROUP[type] : 32);

/** Bytes `dtype` takes in the stream for `n` values: the values, then the scales (q8_m: scale, min pairs) of quantised ones. */
function streamBytes(dtype: TensorInfo['dtype'], n: number, group: number): number {
  if (dtype === 'q8_m') return n + (n / group) * 8;
  if (dtype === 'q8_0') return n + (n / 32) * 4;
  if (dtype === 'q4_0') return n / 2 + (n / 32) * 4;
  return dtype === 'f16' ? n * 2 : n * 4;
}

/**
 * Validates the tensor infos against the config (every tensor a Llama needs, once, with its
 * shape and a supported type, inside the file and not overlapping) and lays out the stream.
 */
export function layoutGguf(h: GgufHeader, fileSize: number, file: string): GgufLayout {
  const config = ggufConfig(h, file);
  const want = expectedShapes(config);
  const found: { name: string; t: GgufTensorHeader; type: GgmlType; rows: number; cols: number; byteLength: number }[] = [];
  const seen = new Set<string>();
  let ropeFreqs: GgufLayout['ropeFreqs'];
  for (const t of h.tensors) {
    if (t.name === ROPE_FREQS && h.metadata['general.architecture'] === 'llama') {
      const count = config.headSize / 2;
      if (t.type !== 0 || t.dims.length !== 1 || t.dims[0] !== count) {
        throw new ModelFormatError(`${file}: ${ROPE_FREQS} is ${GGMLQuantizationType[t.type] ?? `type ${t.type}`} [${t.dims.join(', ')}]; llama.cpp writes F32 [${count}] (head size / 2)`, 'The file is damaged; convert the model again');
      }
      if (t.offset + count * 4 > fileSize) throw new ModelFormatError(`${file}: ${ROPE_FREQS} ends past the end of the file`, 'Re-download the file; it was cut short');
      ropeFreqs = { offset: t.offset, count };
      continue;
    }
    const name = ggufPlanName(t.name);
    const notPart = () => new ModelFormatError(`${file}: tensor "${t.name}" is not part of a ${FAMILY[String(h.metadata['general.architecture'])]} model`, 'webgpu-tp runs Llama, Qwen2 and Qwen3 GGUFs (token_embd, blk.N.attn_*/ffn_*, attn_q/k/v biases in qwen2, attn_q_norm/attn_k_norm in qwen3, rope_freqs in llama, output_norm, output)');
    if (name === undefined) throw notPart();
    if (seen.has(name)) throw new ModelFormatError(`${file}: tensor "${t.name}" is stored twice`);
    seen.add(name);
    const shape = want.get(name);
    // A layer's tensor of another architecture (qwen2's biases in qwen3) is not a block_count mismatch.
    if (!shape && Number(/^layers\.(\d+)\./.exec(name)?.[1] ?? Infinity) < config.nLayers) throw notPart();
    if (!shape) throw new ModelFormatError(`${file}: tensor "${t.name}" is not expected by the metadata (block_count ${config.nLayers})`, 'The metadata does not match the tensors');
    const type = TYPES[t.type];
    if (!type) {
      const label = GGMLQuantizationType[t.type] ?? `type ${t.type}`;
      throw new ModelFormatError(`${file}: tensor "${t.name}" is ${label}; webgpu-tp reads ${SUPPORTED} tensors`, `Convert or quantise the model to one of ${SUPPORTED} (llama-quantize ... Q8_0 or Q4_0)`);
    }
    const [rows, cols] = shape;
    // Norms are [1, dim] and biases [rows, 1] in the plan; GGUF stores both as one dimension.
    const vector = rows === 1 || cols === 1;
    const n = rows * cols;
    const ok = vector
      ? (t.dims.length === 1 && t.dims[0] === n) || (t.dims.length === 2 && t.dims[0] === n && t.dims[1] === 1)
      : t.dims.length === 2 && t.dims[0] === cols && t.dims[1] === rows;
    if (!ok) {
      const expect = vector ? `[${n}]` : `[${cols}, ${rows}] (ne[0] = ${cols} columns, ${rows} rows)`;
      throw new ModelFormatError(`${file}: tensor "${t.name}" has dims [${t.dims.join(', ')}], the metadata implies ${expect}`, 'The metadata does not match the tensors');
    }
    const block = GGML_BLOCK[type].values;
    if ((vector ? n : cols) % block !== 0) throw new ModelFormatError(`${file}: tensor "${t.name}" rows of ${vector ? n : cols} values do not split into ${type} blocks of ${block}`);
    found.push({ name, t, type, rows, cols, byteLength: ggmlBytes(type, rows * cols) });
  }
  const missing = [...want.keys()].filter((n) => !seen.has(n));
  if (missing.length) {
    throw new ModelFormatError(`${file}: the GGUF lacks ${missing.length} tensor(s) a Llama with this metadata needs: ${missing.slice(0, 3).map(ggufName).join(', ')}${missing.length > 3 ? ', ...' : ''}`, 'The file is incomplete, or its metadata is wrong');
  }

  found.sort((a, b) => a.t.offset - b.t.offset);
  for (const [i, x] of found.entries()) {
    const end = x.t.offset + x.byteLength;
    if (end > fileSize) throw new ModelFormatError(`${file}: tensor "${x.t.name}" ends at byte ${end}, the file has ${fileSize}`, 'Re-download the file; it was cut short');
    const next = found[i + 1];
    if (next && next.t.offset < end) throw new ModelFormatError(`${file}: tensors "${x.t.name}" and "${next.t.name}" overlap`);
  }

  // The stream's dtype: quantised and f16 matrices stay so unless a fusion partner is not.
  const MATRIX_DTYPE: Partial<Record<GgmlType, TensorInfo['dtype']>> = {
    F16: 'f16', Q8_0: 'q8_0', Q4_0: 'q4_0', Q4_1: 'q8_m', Q5_0: 'q8_m', Q5_1: 'q8_m', Q4_K: 'q8_m', Q5_K: 'q8_m', Q6_K: 'q8_m',
  };
  const dtypeOf = new Map<string, TensorInfo['dtype']>();
  for (const x of found) dtypeOf.set(x.name, (x.rows > 1 && x.cols > 1 && MATRIX_DTYPE[x.type]) || 'f32');
  for (let l = 0; l < config.nLayers; l++) {
    for (const group of FUSED) {
      const names = group.map((k) => `layers.${l}.${k}`);
      const kinds = new Set(names.map((n) => dtypeOf.get(n)));
      // Q8_0 and Q4_0 parts have an exact q8_m form (workers/q8m-views.ts), so they fuse with K-quants.
      const quantised = kinds.has('q8_m') && [...kinds].every((d) => d === 'q8_m' || d === 'q8_0' || d === 'q4_0');
      if (kinds.size > 1 && !quantised) for (const n of names) dtypeOf.set(n, 'f32');
    }
  }

  const tensors: TensorInfo[] = [];
  const segments: GgufSegment[] = [];
  let v = 0;
  for (const x of found) {
    const dtype = dtypeOf.get(x.name)!;
    const n = x.rows * x.cols;
    const values = dtype === 'q8_0' || dtype === 'q8_m' ? n : dtype === 'q4_0' ? n / 2 : dtype === 'f16' ? n * 2 : n * 4;
    const block = GGML_BLOCK[x.type].values;
    tensors.push({
      name: x.name, offset: v, shape: [x.rows, x.cols], dtype, byteLength: values,
      ...(dtype === 'q8_0' || dtype === 'q4_0' || dtype === 'q8_m'
        ? { quant: { groupSize: groupOf(x.type), scaleOffset: v + values, ...(block > 32 ? { block } : {}) } }
        : {}),
    });
    segments.push({ offset: x.t.offset, byteLength: x.byteLength, type: x.type, dtype });
    v += streamBytes(dtype, n, groupOf(x.type));
  }
  if (config.sharedClassifier) {
    const emb = tensors.find((t) => t.name === 'tok_embeddings')!;
    tensors.push({ ...emb, name: 'output', aliasOf: 'tok_embeddings' });
  }
  return { format: 'gguf', config, tensors, segments, streamBytes: v, metadata: h.metadata, ...(ropeFreqs ? { ropeFreqs } : {}) };
}

/** Bytes of the stream for one segment (the loader sizes the stream with it). */
export function segmentStreamBytes(s: GgufSegment): number {
  const n = (s.byteLength / GGML_BLOCK[s.type].bytes) * GGML_BLOCK[s.type].values;
  return streamBytes(s.dtype, n, groupOf(s.type));
}

/**
 * A whole GGUF file in memory with its weights dequantised to f32: the oracle's model for
 * comparing the engine on a quantised file (every value is what the kernels dequantise).
 */
export async function loadGgufDequantized(bytes: Uint8Array, name = 'model.gguf'): Promise<{ layout: GgufLayout; model: ReferenceModel }> {
  const src: HeadSource = { name, size: async () => bytes.byteLength, head: async (n) => bytes.subarray(0, n), range: async (a, b) => bytes.subarray(a, b) };
  const layout = await readGguf(src);
  const c = layout.config;
  const values = new Map<string, Float32Array>();
  const stored = layout.tensors.filter((t) => !t.aliasOf);
  stored.forEach((t, i) => {
    const s = layout.segments[i]!;
    const out = new Float32Array(t.shape[0] * t.shape[1]);
    dequantize(s.type, bytes.subarray(s.offset, s.offset + s.byteLength), out);
    values.set(t.name, out);
  });
  const stack = (kind: string): Float32Array => {
    const parts = Array.from({ length: c.nLayers }, (_, l) => values.get(`layers.${l}.${kind}`)!);
    const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    parts.forEach((p, l) => out.set(p, l * p.length));
    return out;
  };
  const tokenEmbeddingTable = values.get('tok_embeddings')!;
  const weights: TransformerWeights = {
    tokenEmbeddingTable,
    rmsAttWeight: stack('attention_norm'),
    rmsFfnWeight: stack('ffn_norm'),
    wq: stack('attention.wq'),
    wk: stack('attention.wk'),
    wv: stack('attention.wv'),
    wo: stack('attention.wo'),
    w1: stack('feed_forward.w1'),
    w2: stack('feed_forward.w2'),
    w3: stack('feed_forward.w3'),
    rmsFinalWeight: values.get('norm')!,
    wcls: c.sharedClassifier ? tokenEmbeddingTable : values.get('output')!,
    ...(c.qkvBias ? { bq: stack('attention.bq'), bk: stack('attention.bk'), bv: stack('attention.bv') } : {}),
    ...(c.qkNorm ? { qNorm: stack('attention.q_norm'), kNorm: stack('attention.k_norm') } : {}),
  };
  return { layout, model: { config: c, weights } };
}
