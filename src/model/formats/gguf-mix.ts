/**
 * llama-quantize's K-quant file types (Q4_K_M, Q5_K_M, Q6_K): which ggml type each tensor of a
 * Llama-family model gets, by llama.cpp's rules (llama_tensor_get_type and its shape fallback,
 * src/llama-quant.cpp), without an importance matrix:
 *   - the output matrix, and the token embedding when it is tied to it: Q6_K (Q8_0 if 256 does
 *     not divide its rows);
 *   - Q4_K_M and Q5_K_M: attn_v and ffn_down in the layers `useMoreBits` picks: Q6_K;
 *   - every other matrix: the file's base type (Q4_K, Q5_K, Q6_K); vectors (norms, biases) F32;
 *   - a row that 256 does not divide falls back: Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0, and to
 *     F16 if 32 does not divide it either.
 */
import type { ModelConfig } from '../config.js';
import { GGML_BLOCK, type GgmlType } from './gguf-blocks.js';

/** The K-quant file types, by the names llama-quantize takes. */
export type GgufMix = 'q4_k_m' | 'q5_k_m' | 'q6_k';
export const GGUF_MIXES: readonly GgufMix[] = ['q4_k_m', 'q5_k_m', 'q6_k'];

/** general.file_type (llama_ftype) of each. */
export const MIX_FILE_TYPE: Readonly<Record<GgufMix, number>> = { q4_k_m: 15, q5_k_m: 17, q6_k: 18 };

const BASE: Readonly<Record<GgufMix, GgmlType>> = { q4_k_m: 'Q4_K', q5_k_m: 'Q5_K', q6_k: 'Q6_K' };
const FALLBACK: Partial<Record<GgmlType, GgmlType>> = { Q4_K: 'Q5_0', Q5_K: 'Q5_1', Q6_K: 'Q8_0' };

export function isGgufMix(q: string): q is GgufMix {
  return (GGUF_MIXES as readonly string[]).includes(q);
}

/** llama.cpp's use_more_bits: the first and last eighth of the layers, and every third between. */
export function useMoreBits(layer: number, nLayers: number): boolean {
  const eighth = Math.trunc(nLayers / 8);
  return layer < eighth || layer >= Math.trunc((7 * nLayers) / 8) || (layer - eighth) % 3 === 2;
}

/** The type of the tensor `name` (a plan name: `tok_embeddings`, `layers.3.attention.wv`, ...) of shape [rows, cols]. */
export function ggufMixType(mix: GgufMix, name: string, shape: readonly [number, number], c: ModelConfig): GgmlType {
  if (shape[0] === 1 || shape[1] === 1) return 'F32';
  const cols = shape[1];
  let type = BASE[mix];
  const layer = /^layers\.(\d+)\.(.+)$/.exec(name);
  if (name === 'output' || (name === 'tok_embeddings' && c.sharedClassifier)) type = cols % 256 === 0 ? 'Q6_K' : 'Q8_0';
  else if (mix !== 'q6_k' && layer && ['attention.wv', 'feed_forward.w2'].includes(layer[2]!) && useMoreBits(Number(layer[1]), c.nLayers)) type = 'Q6_K';
  if (cols % GGML_BLOCK[type].values === 0) return type;
  const fallback = FALLBACK[type];
  // llama-quantize has no fallback for Q8_0 and stops; F16 here, as for a row 32 does not divide
  return fallback && cols % GGML_BLOCK[fallback].values === 0 ? fallback : 'F16';
}
