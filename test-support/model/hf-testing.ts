/**
 * Test support for Hugging Face models: oracle weights from a tensor table, and seeded random
 * Qwen2-style models (biases, tied embeddings, GQA, a head_dim of its own) for the engine to
 * match against the oracle. Used by unit tests and e2e specs alike.
 */
import type { ModelConfig, TensorInfo } from '../../src/model/config.js';
import type { TransformerWeights } from '../../src/model/reference.js';
import { mulberry32 } from '../../src/model/mulberry32.js';
import { dequantize } from '../../src/model/formats/gguf-blocks.js';
import { ByteLevelDecoder } from '@huggingface/tokenizers';

/** The oracle's stacked weights from a tensor table over an f32 file held in memory. */
export function stackWeights(c: ModelConfig, tensors: readonly TensorInfo[], bytes: Uint8Array): TransformerWeights {
  const by = new Map(tensors.map((t) => [t.name, t]));
  const one = (name: string): Float32Array => {
    const t = by.get(name);
    if (!t) throw new RangeError(`no tensor ${name}`);
    const stored = bytes.subarray(t.offset, t.offset + t.byteLength);
    if (t.dtype === 'f16') {
      const out = new Float32Array(t.byteLength / 2);
      dequantize('F16', stored, out);
      return out;
    }
    return new Float32Array(stored.slice().buffer);
  };
  const stacked = (kind: string): Float32Array => {
    const parts = Array.from({ length: c.nLayers }, (_, l) => one(`layers.${l}.${kind}`));
    const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  };
  const emb = one('tok_embeddings');
  return {
    tokenEmbeddingTable: emb,
    rmsAttWeight: stacked('attention_norm'),
    wq: stacked('attention.wq'),
    wk: stacked('attention.wk'),
    wv: stacked('attention.wv'),
    ...(c.qkvBias ? { bq: stacked('attention.bq'), bk: stacked('attention.bk'), bv: stacked('attention.bv') } : {}),
    ...(c.qkNorm ? { qNorm: stacked('attention.q_norm'), kNorm: stacked('attention.k_norm') } : {}),
    wo: stacked('attention.wo'),
    ...(c.outBias ? { bo: stacked('attention.bo') } : {}),
    rmsFfnWeight: stacked('ffn_norm'),
    w1: stacked('feed_forward.w1'),
    w2: stacked('feed_forward.w2'),
    w3: stacked('feed_forward.w3'),
    rmsFinalWeight: one('norm'),
    wcls: c.sharedClassifier ? emb : one('output'),
  };
}

/** x rounded to the nearest bf16 value (in place), so the oracle sees what a BF16 file holds. */
export function roundToBf16(x: Float32Array): Float32Array {
  const bits = new Uint32Array(x.buffer, x.byteOffset, x.length);
  // f32ToBf16's rounding on the bits in place (it allocates per value: seconds for a 768-wide model).
  for (let i = 0; i < x.length; i++) {
    const u = bits[i]!;
    bits[i] = (u & 0x7fffffff) > 0x7f800000 ? 0x7fc00000 : (((u + 0x7fff + ((u >> 16) & 1)) >>> 16) & 0xffff) << 16;
  }
  return x;
}

/** A tiny Qwen2-style config: biases, tied embeddings, rope_theta 1e6, GQA, head_dim ≠ dim/heads. */
export const TINY_QWEN2: ModelConfig = {
  dim: 48, hiddenDim: 96, nLayers: 2, nHeads: 4, nKvHeads: 2, vocabSize: 320, seqLen: 128, headSize: 16,
  sharedClassifier: true, normEps: 1e-6, ropeTheta: 1e6, ropeStyle: 'rotate_half', qkvBias: true,
};

/**
 * A tiny Qwen3-style config: per-head q/k norms, no biases, tied embeddings, GQA, and a head_dim
 * (24) that is neither dim/heads (10) nor a power of two.
 */
export const TINY_QWEN3: ModelConfig = {
  dim: 40, hiddenDim: 72, nLayers: 2, nHeads: 4, nKvHeads: 2, vocabSize: 320, seqLen: 128, headSize: 24,
  sharedClassifier: true, normEps: 1e-6, ropeTheta: 1e6, ropeStyle: 'rotate_half', qkNorm: true,
};

/**
 * Seeded random weights for `c`, already rounded to bf16. `scale` multiplies the usual
 * ±1/sqrt(fan_in) init: larger weights give peakier logits, so greedy picks are decided by
 * margins far above the GPU's rounding differences.
 */
export function randomWeights(c: ModelConfig, seed = 1, scale = 1): TransformerWeights {
  const rand = mulberry32(seed);
  const q = c.nHeads * c.headSize;
  const kv = c.nKvHeads * c.headSize;
  const L = c.nLayers;
  const uniform = (n: number, fanIn: number) => {
    const a = scale / Math.sqrt(fanIn);
    const x = new Float32Array(n);
    for (let i = 0; i < n; i++) x[i] = (2 * rand() - 1) * a;
    return roundToBf16(x);
  };
  const norm = (n: number) => roundToBf16(Float32Array.from({ length: n }, () => 0.8 + 0.4 * rand()));
  // Embeddings small beside the layers: a tied classifier would otherwise just echo the input token.
  const emb = uniform(c.vocabSize * c.dim, scale * scale * 4);
  return {
    tokenEmbeddingTable: emb,
    rmsAttWeight: norm(L * c.dim),
    wq: uniform(L * q * c.dim, c.dim),
    wk: uniform(L * kv * c.dim, c.dim),
    wv: uniform(L * kv * c.dim, c.dim),
    ...(c.qkvBias ? { bq: uniform(L * q, 4), bk: uniform(L * kv, 4), bv: uniform(L * kv, 4) } : {}),
    // Norm weights spread wider than the others': a wrong or missing q/k norm shows in the logits.
    ...(c.qkNorm ? { qNorm: roundToBf16(Float32Array.from({ length: L * c.headSize }, () => 0.3 + 1.7 * rand())), kNorm: roundToBf16(Float32Array.from({ length: L * c.headSize }, () => 0.3 + 1.7 * rand())) } : {}),
    wo: uniform(L * c.dim * q, q),
    ...(c.outBias ? { bo: uniform(L * c.dim, 4) } : {}),
    rmsFfnWeight: norm(L * c.dim),
    w1: uniform(L * c.hiddenDim * c.dim, c.dim),
    w2: uniform(L * c.dim * c.hiddenDim, c.hiddenDim),
    w3: uniform(L * c.hiddenDim * c.dim, c.dim),
    rmsFinalWeight: norm(c.dim),
    wcls: c.sharedClassifier ? emb : uniform(c.vocabSize * c.dim, c.dim),
  };
}

/** GPT-2's byte → printable char table, as the library has it. */
const byteDecoder = new ByteLevelDecoder({ type: 'ByteLevel' } as ConstructorParameters<typeof ByteLevelDecoder>[0]).byte_decoder;
// (the library keeps the byte values as strings)
const byteChar = new Map(Object.entries(byteDecoder).map(([ch, b]) => [Number(b), ch]));
/** Text as byte-level chars. */
const enc = (s: string) => [...new TextEncoder().encode(s)].map((b) => byteChar.get(b)!).join('');

/** A Qwen2-like byte-level BPE: 256 byte tokens, merges for a few words (incl. CJK bytes), special tokens. */
export function byteLevelTokenizer(): { json: object; config: object } {
  const vocab: Record<string, number> = {};
  for (let b = 0; b < 256; b++) vocab[byteChar.get(b)!] = b;
  const merges: [string, string][] = [];
  const addMerge = (a: string, b: string) => {
    merges.push([a, b]);
    vocab[a + b] ??= Object.keys(vocab).length;
  };
  for (const word of ['Ġhello', 'Ġworld', enc('世界'), enc(' 🙂')]) {
    const chars = [...word];
    let acc = chars[0]!;
    for (const ch of chars.slice(1)) {
      addMerge(acc, ch);
      acc += ch;
    }
  }
  const n = Object.keys(vocab).length;
  const special = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'].map((content, i) => ({ id: n + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  return {
    json: {
      version: '1.0',
      added_tokens: special,
      normalizer: null,
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: true },
      decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab, merges },
    },
    config: {
      eos_token: '<|im_end|>', bos_token: null,
      chat_template: "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    },
  };
}
