/**
 * GGUF test files whose matrices each take their own type, as llama-quantize's *_M mixes do
 * (Q4_K_M: Q4_K with Q6_K for the embedding, attn_v and some ffn_down), written by ggml's
 * reference quantisation (src/model/formats/gguf-kquants-write.ts), and the synthetic model they
 * are made of: a Llama whose every row is whole super-blocks of 256.
 */
import type { ModelConfig } from '../../src/model/config.js';
import type { ReferenceModel } from '../../src/model/reference.js';
import type { GgmlType } from '../../src/model/formats/gguf-blocks.js';
import { encodeGguf } from '../../src/model/formats/gguf-write.js';
import type { Tokenizer } from '../../src/model/tokenizer/tokenizer.js';
import { randomWeights } from './hf-testing.js';

/** A tiny Llama with a tied embedding: dim 512 and hidden 512 are two super-blocks; head size 64. */
export const KQUANT_CONFIG: ModelConfig = {
  dim: 512, hiddenDim: 512, nLayers: 2, nHeads: 8, nKvHeads: 4, vocabSize: 512, seqLen: 64, headSize: 64,
  sharedClassifier: true, normEps: 1e-5, ropeTheta: 10000, ropeStyle: 'interleaved',
};

/**
 * Random weights (hf-testing.ts's), scaled up so that greedy decoding neither repeats one token
 * nor returns to BOS: seed 5 at scale 4, stored as `q4kmMix`, gives 30 distinct tokens in 32
 * steps, each ahead of the runner-up by at least 0.17% of its logit.
 */
export function kquantModel(config: ModelConfig = KQUANT_CONFIG, seed = 5, scale = 4): ReferenceModel {
  return { config, weights: randomWeights(config, seed, scale) };
}

/** Picks a matrix's type from its plan name (`tok_embeddings`, `layers.0.attention.wv`, ...). */
export type TypeOf = (name: string) => GgmlType;

/** One type for every matrix. */
export const allOf = (type: GgmlType): TypeOf => () => type;

/**
 * llama-quantize's Q4_K_M choice in miniature: Q6_K for the (tied) embedding, attn_v and layer 0's
 * ffn_down; Q4_K elsewhere, but Q5_K for layer 1's ffn_gate (as Q5_K_M would), so all three
 * meet, and the fallback types of files whose rows 256 does not divide beside them: Q8_0 for
 * layer 1's attn_k and Q4_0 for layer 0's ffn_up.
 */
export const q4kmMix: TypeOf = (name) => {
  if (name === 'tok_embeddings' || name.endsWith('attention.wv') || name === 'layers.0.feed_forward.w2') return 'Q6_K';
  const other: Record<string, GgmlType> = { 'layers.1.feed_forward.w1': 'Q5_K', 'layers.1.attention.wk': 'Q8_0', 'layers.0.feed_forward.w3': 'Q4_0' };
  return other[name] ?? 'Q4_K';
};

/**
 * `model` as a GGUF file with each matrix in `typeOf(name)` and the norms in F32; a matrix whose
 * rows are not whole blocks of its type falls back to F16 (encodeGguf's `typeOf`).
 */
export function encodeTypedGguf(model: ReferenceModel, typeOf: TypeOf, tokenizer?: Tokenizer): Uint8Array {
  return encodeGguf(model, 'f32', tokenizer, typeOf);
}
