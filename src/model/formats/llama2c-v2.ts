/**
 * llama2.c version 2 checkpoints (`export.py --version 2`, read by `runq.c`): Q8_0 weights.
 *
 * A 256-byte header: uint32 magic "ak42", int32 version (2), the 7 int32s of version 0
 * (vocab_size positive), a uint8 shared-classifier flag, an int32 group size, zero padding.
 * Then the f32 norms (attention_norm × layers, ffn_norm × layers, norm) and the Q8_0 matrices
 * (tok_embeddings, wq, wk, wv, wo, w1, w2, w3 each × layers, then output unless shared), each
 * stored as its rows·cols int8 values followed by its rows·cols/group_size f32 scales: the
 * layout runq.c's `init_quantized_tensors` walks. A value is q · scale of its group, and groups
 * run along a row (runq.c's matmul indexes scales by (row·n + j) / GS), so each row length
 * must be a multiple of the group size.
 */
import { ModelFormatError } from '../../errors.js';
import type { ModelConfig, TensorInfo } from '../config.js';
import type { Q8Tensor, Q8TransformerWeights } from '../reference-q8.js';
import { LLAMA2C_MAGIC, llama2cConfigFromHeader, type Llama2cLayout } from './llama2c.js';

export const LLAMA2C_V2_HEADER_BYTES = 256;

export interface Llama2cV2Layout extends Llama2cLayout {
  /** Values per scale (runq.c's GS). */
  groupSize: number;
}

/** The quantised matrices in file order; `count` is 1 or n_layers. */
function quantKinds(c: ModelConfig): { name: string; rows: number; cols: number; perLayer: boolean }[] {
  const qDim = c.nHeads * c.headSize;
  const kvDim = c.nKvHeads * c.headSize;
  const kinds = [
    { name: 'tok_embeddings', rows: c.vocabSize, cols: c.dim, perLayer: false },
    { name: 'attention.wq', rows: qDim, cols: c.dim, perLayer: true },
    { name: 'attention.wk', rows: kvDim, cols: c.dim, perLayer: true },
    { name: 'attention.wv', rows: kvDim, cols: c.dim, perLayer: true },
    { name: 'attention.wo', rows: c.dim, cols: qDim, perLayer: true },
    { name: 'feed_forward.w1', rows: c.hiddenDim, cols: c.dim, perLayer: true },
    { name: 'feed_forward.w2', rows: c.dim, cols: c.hiddenDim, perLayer: true },
    { name: 'feed_forward.w3', rows: c.hiddenDim, cols: c.dim, perLayer: true },
  ];
  if (!c.sharedClassifier) kinds.push({ name: 'output', rows: c.vocabSize, cols: c.dim, perLayer: false });
  return kinds;
}

/**
 * Parses the 256-byte header and lays out every tensor, checking the file size exactly (BigInt
 * arithmetic, before anything is allocated) and that every row splits into whole groups.
 */
export function parseLlama2cV2Header(header: ArrayBuffer | Uint8Array, fileSize: number): Llama2cV2Layout {
  if (!Number.isSafeInteger(fileSize) || fileSize < 0) throw new ModelFormatError(`file size must be a byte count, got ${fileSize}`);
  const bytes = header instanceof Uint8Array ? header : new Uint8Array(header);
  if (bytes.byteLength < 41 || fileSize < LLAMA2C_V2_HEADER_BYTES) {
    throw new ModelFormatError(`a llama2.c version 2 file starts with a ${LLAMA2C_V2_HEADER_BYTES}-byte header, got ${Math.min(bytes.byteLength, fileSize)} bytes`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = view.getUint32(0, true);
  if (magic !== LLAMA2C_MAGIC) throw new ModelFormatError(`expected the llama2.c magic 0x616b3432 ("ak42"), got 0x${magic.toString(16)}`);
  const version = view.getInt32(4, true);
  if (version !== 2) {
    throw new ModelFormatError(
      `llama2.c version ${version} files are not supported; expected version 2 (Q8_0, runq.c) or the legacy version 0`,
      'Export with `python export.py out.bin --version 2` (or --version 0)',
    );
  }
  const h = Array.from({ length: 7 }, (_, i) => view.getInt32(8 + 4 * i, true));
  const flag = view.getUint8(36);
  if (flag > 1) throw new ModelFormatError(`llama2.c v2 header: the shared-classifier byte must be 0 or 1, got ${flag}`);
  if (h[5]! <= 0) throw new ModelFormatError(`llama2.c v2 header: expected vocab_size > 0, got ${h[5]}`);
  const config = llama2cConfigFromHeader(h, flag === 1);
  const groupSize = view.getInt32(37, true);
  // The kernels read 4 int8 values per 32-bit word, so a group must be whole words.
  if (!(groupSize > 0) || groupSize % 4 !== 0) {
    throw new ModelFormatError(
      `llama2.c v2 header: group size ${groupSize} is not supported, expected a positive multiple of 4`,
      'Export with a group size that is a multiple of 4 (export.py halves 64 until it divides dim)',
    );
  }
  for (const k of quantKinds(config)) {
    if (k.cols % groupSize !== 0) {
      throw new ModelFormatError(`llama2.c v2: ${k.name} rows of ${k.cols} values do not split into groups of ${groupSize}`);
    }
  }
  const c = config;
  let expected = BigInt(LLAMA2C_V2_HEADER_BYTES) + BigInt(2 * c.nLayers + 1) * BigInt(c.dim) * 4n;
  for (const k of quantKinds(c)) {
    const n = BigInt(k.rows) * BigInt(k.cols) * BigInt(k.perLayer ? c.nLayers : 1);
    expected += n + (n / BigInt(groupSize)) * 4n;
  }
  if (expected !== BigInt(fileSize)) {
    const e = expected > BigInt(Number.MAX_SAFE_INTEGER) ? `${expected} (impossibly large: the header is corrupt)` : `${expected}`;
    throw new ModelFormatError(
      `llama2.c v2 file size mismatch: header (dim ${c.dim}, hidden_dim ${c.hiddenDim}, n_layers ${c.nLayers}, n_heads ${c.nHeads}, ` +
        `n_kv_heads ${c.nKvHeads}, vocab_size ${c.vocabSize}, seq_len ${c.seqLen}, group size ${groupSize}) implies ${e} bytes, the file has ${fileSize}`,
    );
  }
  return { config, groupSize, tensors: llama2cV2TensorTable(config, groupSize) };
}

/** The tensor table of a version 2 file: f32 norms, then Q8_0 matrices (values, then scales). */
export function llama2cV2TensorTable(c: ModelConfig, groupSize: number): TensorInfo[] {
  const tensors: TensorInfo[] = [];
  let offset = LLAMA2C_V2_HEADER_BYTES;
  const norm = (name: string): void => {
    tensors.push({ name, offset, shape: [1, c.dim], dtype: 'f32', byteLength: c.dim * 4 });
    offset += c.dim * 4;
  };
  for (let l = 0; l < c.nLayers; l++) norm(`layers.${l}.attention_norm`);
  for (let l = 0; l < c.nLayers; l++) norm(`layers.${l}.ffn_norm`);
  norm('norm');
  for (const k of quantKinds(c)) {
    const names = k.perLayer ? Array.from({ length: c.nLayers }, (_, l) => `layers.${l}.${k.name}`) : [k.name];
    for (const name of names) {
      const n = k.rows * k.cols;
      tensors.push({ name, offset, shape: [k.rows, k.cols], dtype: 'q8_0', byteLength: n, quant: { groupSize, scaleOffset: offset + n } });
      offset += n + (n / groupSize) * 4;
    }
  }
  if (c.sharedClassifier) tensors.push({ ...tensors.find((t) => t.name === 'tok_embeddings')!, name: 'output', aliasOf: 'tok_embeddings' });
  return tensors;
}

/** The exact size of a version 2 file with this config and group size. */
export function llama2cV2FileSize(c: ModelConfig, groupSize: number): number {
  const last = llama2cV2TensorTable(c, groupSize).filter((t) => !t.aliasOf).at(-1)!;
  return last.quant!.scaleOffset + (last.byteLength / groupSize) * 4;
}

/** The 256-byte header of a version 2 file. */
export function encodeLlama2cV2Header(c: ModelConfig, groupSize: number): Uint8Array {
  const out = new Uint8Array(LLAMA2C_V2_HEADER_BYTES);
  const view = new DataView(out.buffer);
  view.setUint32(0, LLAMA2C_MAGIC, true);
  view.setInt32(4, 2, true);
  [c.dim, c.hiddenDim, c.nLayers, c.nHeads, c.nKvHeads, c.vocabSize, c.seqLen].forEach((v, i) => view.setInt32(8 + 4 * i, v, true));
  view.setUint8(36, c.sharedClassifier ? 1 : 0);
  view.setInt32(37, groupSize, true);
  return out;
}

export interface Llama2cV2Model extends Llama2cV2Layout {
  /** Views into the file's bytes (no copies), as runq.c maps them. */
  weights: Q8TransformerWeights;
}

/** Parses a whole version 2 checkpoint held in memory into views (the oracle's entry point). */
export function loadLlama2cV2(bytes: ArrayBuffer): Llama2cV2Model {
  const layout = parseLlama2cV2Header(new Uint8Array(bytes, 0, Math.min(bytes.byteLength, LLAMA2C_V2_HEADER_BYTES)), bytes.byteLength);
  const { config: c, groupSize } = layout;
  const byName = new Map(layout.tensors.map((t) => [t.name, t]));
  const f32 = (name: string): Float32Array => {
    const t = byName.get(name)!;
    return new Float32Array(bytes, t.offset, t.byteLength / 4);
  };
  const q8 = (name: string): Q8Tensor => {
    const t = byName.get(name)!;
    return { q: new Int8Array(bytes, t.offset, t.byteLength), s: new Float32Array(bytes, t.quant!.scaleOffset, t.byteLength / groupSize) };
  };
  const stackedNorm = (kind: string): Float32Array => {
    const first = byName.get(`layers.0.${kind}`)!;
    return new Float32Array(bytes, first.offset, c.dim * c.nLayers);
  };
  const perLayer = (kind: string): Q8Tensor[] => Array.from({ length: c.nLayers }, (_, l) => q8(`layers.${l}.${kind}`));
  const tokens = q8('tok_embeddings');
  const weights: Q8TransformerWeights = {
    groupSize,
    tokens,
    rmsAttWeight: stackedNorm('attention_norm'),
    rmsFfnWeight: stackedNorm('ffn_norm'),
    wq: perLayer('attention.wq'),
    wk: perLayer('attention.wk'),
    wv: perLayer('attention.wv'),
    wo: perLayer('attention.wo'),
    w1: perLayer('feed_forward.w1'),
    w2: perLayer('feed_forward.w2'),
    w3: perLayer('feed_forward.w3'),
    rmsFinalWeight: f32('norm'),
    wcls: c.sharedClassifier ? tokens : q8('output'),
  };
  return { ...layout, weights };
}
