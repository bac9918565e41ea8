/**
 * The shape of a Llama-family model, as every layer of webgpu-tp sees it. Format readers
 * (llama2.c, safetensors, GGUF) produce one; the plan, the oracle and the kernels consume it.
 */
export interface ModelConfig {
  /** Transformer width (llama2.c `dim`). */
  dim: number;
  /** MLP hidden width (llama2.c `hidden_dim`). */
  hiddenDim: number;
  nLayers: number;
  /** Query heads. */
  nHeads: number;
  /** Key/value heads (grouped-query attention when < nHeads). */
  nKvHeads: number;
  vocabSize: number;
  /** Maximum sequence length the model was trained for (llama2.c `seq_len`). */
  seqLen: number;
  /** dim / nHeads for llama2.c; may differ for HF models (`head_dim`). */
  headSize: number;
  /** The classifier is the embedding table (llama2.c: vocab_size > 0 in the header). */
  sharedClassifier: boolean;
  /** RMSNorm epsilon (llama2.c: 1e-5). */
  normEps: number;
  /** RoPE base (llama2.c: 10000). */
  ropeTheta: number;
  /** `interleaved`: pairs (2i, 2i+1), llama2.c; `rotate_half`: pairs (i, i + hs/2), Hugging Face. */
  ropeStyle: 'interleaved' | 'rotate_half';
  /** Frequency scaling of RoPE (Llama 3.1+); absent means none. */
  ropeScaling?: RopeScaling;
  /** q, k and v projections add a bias (Qwen2): tensors `layers.{l}.attention.bq|bk|bv`. */
  qkvBias?: boolean;
  /**
   * q and k are RMS-normalised per head after the projection, before RoPE (Qwen3): tensors
   * `layers.{l}.attention.q_norm|k_norm`, (head_size) each, one weight shared by every head.
   */
  qkNorm?: boolean;
  /** o_proj adds a bias (Llama's attention_bias): `layers.{l}.attention.bo`, added once after the all-reduce. */
  outBias?: boolean;
}

/** RoPE frequency scaling: Llama 3's parameters (Hugging Face) or the per-frequency divisors they give (GGUF). */
export type RopeScaling = Llama3RopeScaling | RopeFreqFactors;

/** Llama 3's RoPE scaling: long wavelengths are slowed by `factor`, short ones kept, a smooth ramp between. */
export interface Llama3RopeScaling {
  type: 'llama3';
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  originalMaxPositionEmbeddings: number;
}

/** Frequency i is divided by `factors[i]` (headSize / 2 of them): llama.cpp's `rope_freqs` tensor, as Llama 3.1+ GGUFs store their scaling. */
export interface RopeFreqFactors {
  type: 'factors';
  factors: readonly number[];
}

/** One tensor of a checkpoint file, as the plan and the loader see it. */
export interface TensorInfo {
  /** Format-neutral names: `tok_embeddings`, `layers.{l}.attention.wq`, ..., `norm`, `output`. */
  name: string;
  /** Byte offset of the first element in the file. */
  offset: number;
  /** [rows, cols] = [out, in]; norms are [1, dim]. */
  shape: [number, number];
  /**
   * `f32`: rows·cols floats. `q8_0`: llama2.c version 2 (runq.c) storage: rows·cols int8 values
   * at `offset`, then one f32 scale per `quant.groupSize` consecutive values of a row at
   * `quant.scaleOffset` (the value is q · scale). `q4_0` (GGML's Q4_0, groups of 32): rows·cols/2
   * bytes at `offset`, 16 per group; byte k of a group holds element k in its low nibble and
   * element k + 16 in its high one, each as q + 8 (0..15); then one f32 scale per group at
   * `quant.scaleOffset` (the value is (nibble − 8) · scale). `f16`: rows·cols IEEE halves,
   * little-endian (GGUF F16 matrices, kept in f16 on the GPU); rows have an even length.
   * `q8_m` (GGUF Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, exactly): rows·cols byte codes at `offset`,
   * then an f32 (scale, min) pair per group at `quant.scaleOffset`; the value is code · scale + min.
   */
  dtype: 'f32' | 'f16' | 'q8_0' | 'q4_0' | 'q8_m';
  /** f32: rows·cols·4; f16: rows·cols·2; q8_0: the int8 values' rows·cols; q4_0: the nibbles' rows·cols/2 (the scales are extra). */
  byteLength: number;
  /** Set for quantised dtypes. Groups never straddle rows (cols % groupSize === 0). */
  quant?: {
    groupSize: number;
    scaleOffset: number;
    /** Columns a split keeps together when more than a group: a K-quant's super-block of 256. */
    block?: number;
  };
  /**
   * Set when this tensor is stored as another one's bytes (`output` of a shared classifier is
   * `tok_embeddings`): same offset, same shape. Loaders may then route one range twice.
   */
  aliasOf?: string;
}
