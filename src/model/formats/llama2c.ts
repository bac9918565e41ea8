/**
 * llama2.c checkpoints, legacy (version 0) format, as read by `run.c`:
 *   7 × int32 header: dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
 *   then f32 tensors back to back (see `memory_map_weights` in run.c). A negative vocab_size
 *   means the classifier is stored separately at the end instead of reusing the embedding.
 *
 * Every matrix is stored W[out][in] row-major (run.c's comments name them (in, out), but
 * `matmul` reads row i of W for output i). The loader streams byte ranges to ranks, so the
 * tensor table carries exact file offsets and is computed from the header and file size alone.
 */
import { ModelFormatError } from '../../errors.js';
import type { ModelConfig, TensorInfo } from '../config.js';

export type { TensorInfo };
import type { TransformerWeights } from '../reference.js';

export const LLAMA2C_HEADER_BYTES = 28;

/** llama2.c's newer `export.py --version 1/2` files start with this magic ("ak42"). */
export const LLAMA2C_MAGIC = 0x616b3432;

/**
 * Upper bounds far above any Llama (the largest has dim 16384, 126 layers, a 256k vocab), so
 * that a corrupt header whose size happens to match (or a server that lies about the size)
 * cannot make the loader build tables, KV caches or plans proportional to nonsense.
 */
const HEADER_LIMITS: Record<string, number> = {
  dim: 1 << 16, hidden_dim: 1 << 20, n_layers: 1024, n_heads: 1 << 12, n_kv_heads: 1 << 12,
  '|vocab_size|': 1 << 24, seq_len: 1 << 20,
};

export interface Llama2cLayout {
  config: ModelConfig;
  tensors: TensorInfo[];
}

function readHeader(header: ArrayBuffer | Uint8Array): Int32Array {
  const bytes = header instanceof Uint8Array ? header : new Uint8Array(header);
  if (bytes.byteLength < LLAMA2C_HEADER_BYTES) {
    throw new ModelFormatError(`llama2.c header needs ${LLAMA2C_HEADER_BYTES} bytes, got ${bytes.byteLength}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, LLAMA2C_HEADER_BYTES);
  const out = new Int32Array(7);
  for (let i = 0; i < 7; i++) out[i] = view.getInt32(i * 4, true);
  return out;
}

/**
 * Parses the 28-byte header and lays out every tensor, checking that `fileSize` is exactly what
 * the header implies. All size arithmetic is in BigInt, so absurd headers fail the size check
 * (or the explicit ones) instead of overflowing; nothing is allocated before that.
 */
export function parseLlama2cHeader(header: ArrayBuffer | Uint8Array, fileSize: number): Llama2cLayout {
  if (!Number.isSafeInteger(fileSize) || fileSize < 0) throw new ModelFormatError(`file size must be a byte count, got ${fileSize}`);
  const h = readHeader(header);
  if (h[0] === LLAMA2C_MAGIC) {
    throw new ModelFormatError(
      'This is a llama2.c version 1/2 export (magic "ak42"); expected the legacy version 0 format',
      'Read it with parseModelHeader (formats/detect.ts), which also takes version 2 (runq.c) files',
    );
  }
  const config = llama2cConfigFromHeader(Array.from(h), h[5]! > 0);
  const { dim, hiddenDim, nLayers, nHeads, nKvHeads, seqLen } = config;
  const rawVocab = h[5]!;

  // Sizes in BigInt: rows and cols are exact numbers, their products may not be.
  let expected = BigInt(LLAMA2C_HEADER_BYTES);
  for (const k of storedKinds(config)) expected += BigInt(k.count) * BigInt(k.rows) * BigInt(k.cols) * 4n;
  if (expected !== BigInt(fileSize)) {
    const c = expected > BigInt(Number.MAX_SAFE_INTEGER) ? `${expected} (impossibly large: the header is corrupt)` : `${expected}`;
    throw new ModelFormatError(
      `llama2.c file size mismatch: header (dim ${dim}, hidden_dim ${hiddenDim}, n_layers ${nLayers}, n_heads ${nHeads}, ` +
        `n_kv_heads ${nKvHeads}, vocab_size ${rawVocab}, seq_len ${seqLen}) implies ${c} bytes, the file has ${fileSize}`,
    );
  }
  return { config, tensors: llama2cTensorTable(config) };
}

/**
 * The ModelConfig of the 7 header ints (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
 * vocab_size, seq_len; |vocab_size| is used), validated: every field positive, heads dividing
 * dim, kv heads dividing heads, an even head size. Shared by every llama2.c version.
 */
export function llama2cConfigFromHeader(h: readonly number[], sharedClassifier: boolean): ModelConfig {
  const [dim, hiddenDim, nLayers, nHeads, nKvHeads, rawVocab, seqLen] = h as [number, number, number, number, number, number, number];
  const fields: [string, number][] = [
    ['dim', dim], ['hidden_dim', hiddenDim], ['n_layers', nLayers], ['n_heads', nHeads],
    ['n_kv_heads', nKvHeads], ['|vocab_size|', Math.abs(rawVocab)], ['seq_len', seqLen],
  ];
  for (const [name, v] of fields) {
    if (!(v > 0)) throw new ModelFormatError(`llama2.c header: expected ${name} > 0, got ${v} (header ${h.join(', ')})`);
    const limit = HEADER_LIMITS[name]!;
    if (v > limit) {
      throw new ModelFormatError(
        `llama2.c header: ${name} ${v} is above the limit ${limit} (header ${h.join(', ')})`,
        'The header is corrupt, or the model is far larger than webgpu-tp supports; check that the file is a llama2.c checkpoint',
      );
    }
  }
  if (dim % nHeads !== 0) {
    throw new ModelFormatError(`llama2.c header: n_heads must divide dim, got dim ${dim} and n_heads ${nHeads}`);
  }
  if (nHeads % nKvHeads !== 0) {
    throw new ModelFormatError(`llama2.c header: n_kv_heads must divide n_heads, got n_heads ${nHeads} and n_kv_heads ${nKvHeads}`);
  }
  const headSize = dim / nHeads;
  if (headSize % 2 !== 0) {
    throw new ModelFormatError(`llama2.c header: head size dim/n_heads must be even for RoPE, got ${dim}/${nHeads} = ${headSize}`);
  }
  return {
    dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize: Math.abs(rawVocab), seqLen, headSize,
    sharedClassifier, normEps: 1e-5, ropeTheta: 10000, ropeStyle: 'interleaved',
  };
}

/** What run.c's `memory_map_weights` walks over, in file order; `count` is 1 or n_layers. */
function storedKinds(c: ModelConfig): { name: string; rows: number; cols: number; count: number; perLayer: boolean; skip?: boolean }[] {
  const L = c.nLayers;
  const qDim = c.nHeads * c.headSize;
  const kvDim = c.nKvHeads * c.headSize;
  const kinds = [
    { name: 'tok_embeddings', rows: c.vocabSize, cols: c.dim, count: 1, perLayer: false },
    { name: 'attention_norm', rows: 1, cols: c.dim, count: L, perLayer: true },
    { name: 'attention.wq', rows: qDim, cols: c.dim, count: L, perLayer: true },
    { name: 'attention.wk', rows: kvDim, cols: c.dim, count: L, perLayer: true },
    { name: 'attention.wv', rows: kvDim, cols: c.dim, count: L, perLayer: true },
    { name: 'attention.wo', rows: c.dim, cols: qDim, count: L, perLayer: true },
    { name: 'ffn_norm', rows: 1, cols: c.dim, count: L, perLayer: true },
    { name: 'feed_forward.w1', rows: c.hiddenDim, cols: c.dim, count: L, perLayer: true },
    { name: 'feed_forward.w2', rows: c.dim, cols: c.hiddenDim, count: L, perLayer: true },
    { name: 'feed_forward.w3', rows: c.hiddenDim, cols: c.dim, count: L, perLayer: true },
    { name: 'norm', rows: 1, cols: c.dim, count: 1, perLayer: false },
    // freq_cis_real and freq_cis_imag, (seq_len, head_size / 2) each; unused since RoPE is computed
    { name: 'freq_cis', rows: 2 * c.seqLen, cols: c.headSize / 2, count: 1, perLayer: false, skip: true },
  ];
  if (!c.sharedClassifier) kinds.push({ name: 'output', rows: c.vocabSize, cols: c.dim, count: 1, perLayer: false });
  return kinds;
}

/** The exact size of a llama2.c file with this config. */
export function llama2cFileSize(c: ModelConfig): number {
  return storedKinds(c).reduce((n, k) => n + k.count * k.rows * k.cols * 4, LLAMA2C_HEADER_BYTES);
}

/** The tensor table of a llama2.c file with this config (names, byte offsets, [out, in] shapes). */
export function llama2cTensorTable(c: ModelConfig): TensorInfo[] {
  const tensors: TensorInfo[] = [];
  let offset = LLAMA2C_HEADER_BYTES;
  const push = (name: string, rows: number, cols: number): void => {
    tensors.push({ name, offset, shape: [rows, cols], dtype: 'f32', byteLength: rows * cols * 4 });
    offset += rows * cols * 4;
  };
  for (const k of storedKinds(c)) {
    if (k.skip) offset += k.rows * k.cols * 4;
    else if (!k.perLayer) push(k.name, k.rows, k.cols);
    else for (let l = 0; l < c.nLayers; l++) push(`layers.${l}.${k.name}`, k.rows, k.cols);
  }
  if (c.sharedClassifier) tensors.push({ ...tensors[0]!, name: 'output', aliasOf: 'tok_embeddings' });
  return tensors;
}

/** Serializes a config back into the 28-byte header (negative vocab when not shared). */
export function encodeLlama2cHeader(c: ModelConfig): Uint8Array {
  const h = new Int32Array([c.dim, c.hiddenDim, c.nLayers, c.nHeads, c.nKvHeads, c.sharedClassifier ? c.vocabSize : -c.vocabSize, c.seqLen]);
  const out = new Uint8Array(LLAMA2C_HEADER_BYTES);
  const view = new DataView(out.buffer);
  for (let i = 0; i < 7; i++) view.setInt32(i * 4, h[i]!, true);
  return out;
}

export interface Llama2cModel extends Llama2cLayout {
  /** Stacked per-kind views into `bytes` (no copies), the shape run.c uses. */
  weights: TransformerWeights;
}

/** Parses a whole checkpoint held in memory into views (the oracle's and tests' entry point). */
export function loadLlama2c(bytes: ArrayBuffer): Llama2cModel {
  const layout = parseLlama2cHeader(new Uint8Array(bytes, 0, Math.min(bytes.byteLength, LLAMA2C_HEADER_BYTES)), bytes.byteLength);
  const byName = new Map(layout.tensors.map((t) => [t.name, t]));
  // Per-layer tensors of one kind are contiguous in the file, so one view spans all layers.
  const stacked = (kind: string): Float32Array => {
    const first = byName.get(`layers.0.${kind}`)!;
    return new Float32Array(bytes, first.offset, (first.byteLength / 4) * layout.config.nLayers);
  };
  const single = (name: string): Float32Array => {
    const t = byName.get(name)!;
    return new Float32Array(bytes, t.offset, t.byteLength / 4);
  };
  const tokenEmbeddingTable = single('tok_embeddings');
  const weights: TransformerWeights = {
    tokenEmbeddingTable,
    rmsAttWeight: stacked('attention_norm'),
    wq: stacked('attention.wq'),
    wk: stacked('attention.wk'),
    wv: stacked('attention.wv'),
    wo: stacked('attention.wo'),
    rmsFfnWeight: stacked('ffn_norm'),
    w1: stacked('feed_forward.w1'),
    w2: stacked('feed_forward.w2'),
    w3: stacked('feed_forward.w3'),
    rmsFinalWeight: single('norm'),
    wcls: layout.config.sharedClassifier ? tokenEmbeddingTable : single('output'),
  };
  return { ...layout, weights };
}
