import { describe, expect, it } from 'vitest';
import { ModelFormatError } from '../../errors.js';
import { ropeTables } from '../reference.js';
import { parseHfConfig } from './hf-config.js';

/** SmolLM2-135M's config.json (the fields that matter). */
const smollm = {
  architectures: ['LlamaForCausalLM'], hidden_act: 'silu', hidden_size: 576, intermediate_size: 1536, num_hidden_layers: 30,
  num_attention_heads: 9, num_key_value_heads: 3, rms_norm_eps: 1e-5, rope_theta: 100000, rope_scaling: null,
  tie_word_embeddings: true, vocab_size: 49152, max_position_embeddings: 8192, bos_token_id: 0, eos_token_id: 0,
};

/** Qwen2.5-0.5B-Instruct's. */
const qwen = {
  architectures: ['Qwen2ForCausalLM'], hidden_act: 'silu', hidden_size: 896, intermediate_size: 4864, num_hidden_layers: 24,
  num_attention_heads: 14, num_key_value_heads: 2, rms_norm_eps: 1e-6, rope_theta: 1000000, sliding_window: 32768,
  use_sliding_window: false, tie_word_embeddings: true, vocab_size: 151936, max_position_embeddings: 32768, eos_token_id: 151645, bos_token_id: 151643,
};

/** Llama 3.2 1B's, with llama3 RoPE scaling. */
const llama32 = {
  architectures: ['LlamaForCausalLM'], hidden_size: 2048, intermediate_size: 8192, num_hidden_layers: 16, num_attention_heads: 32,
  num_key_value_heads: 8, head_dim: 64, rms_norm_eps: 1e-5, rope_theta: 500000, tie_word_embeddings: true, vocab_size: 128256,
  max_position_embeddings: 131072, bos_token_id: 128000, eos_token_id: [128001, 128008, 128009],
  rope_scaling: { factor: 32.0, high_freq_factor: 4.0, low_freq_factor: 1.0, original_max_position_embeddings: 8192, rope_type: 'llama3' },
};

describe('parseHfConfig', () => {
  it('reads a Llama (SmolLM2) into a rotate_half ModelConfig', () => {
    const h = parseHfConfig(smollm);
    expect(h.config).toEqual({
      dim: 576, hiddenDim: 1536, nLayers: 30, nHeads: 9, nKvHeads: 3, vocabSize: 49152, seqLen: 8192, headSize: 64,
      sharedClassifier: true, normEps: 1e-5, ropeTheta: 100000, ropeStyle: 'rotate_half',
    });
    expect(h.architecture).toBe('LlamaForCausalLM');
    expect(h.eosTokenIds).toEqual([0]);
    expect(h.bosTokenId).toBe(0);
  });

  it('reads Qwen2 with q/k/v biases, and no sliding window when use_sliding_window is false', () => {
    const h = parseHfConfig(qwen);
    expect(h.config.qkvBias).toBe(true);
    expect(h.config.headSize).toBe(64);
    expect(h.config.ropeTheta).toBe(1e6);
    expect(h.slidingWindow).toBeUndefined();
    expect(parseHfConfig({ ...qwen, use_sliding_window: true, sliding_window: 4096 }).slidingWindow).toBe(4096);
  });

  it('prefers generation_config.json eos ids', () => {
    expect(parseHfConfig(qwen, { eos_token_id: [151645, 151643] }).eosTokenIds).toEqual([151645, 151643]);
    expect(parseHfConfig(llama32).eosTokenIds).toEqual([128001, 128008, 128009]);
  });

  it('reads Llama\'s attention_bias as biases on q, k, v and o', () => {
    const c = parseHfConfig({ ...smollm, attention_bias: true }).config;
    expect(c.qkvBias).toBe(true);
    expect(c.outBias).toBe(true);
    expect(parseHfConfig({ ...smollm, attention_bias: false }).config.outBias).toBeUndefined();
  });

  it('takes head_dim when it differs from hidden_size / heads', () => {
    const h = parseHfConfig({ ...smollm, hidden_size: 64, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 24 });
    expect(h.config.headSize).toBe(24);
    expect(() => parseHfConfig({ ...smollm, hidden_size: 70, num_attention_heads: 4, num_key_value_heads: 2 })).toThrow(/head_dim is missing/);
    expect(() => parseHfConfig({ ...smollm, head_dim: 512 })).toThrow(/head_dim 512 is larger than the 256/);
  });

  it('reads llama3 rope scaling, in the old rope_scaling and the new rope_parameters form', () => {
    const a = parseHfConfig(llama32).config;
    expect(a.ropeScaling).toEqual({ type: 'llama3', factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 });
    const { rope_scaling, rope_theta, ...rest } = llama32;
    const b = parseHfConfig({ ...rest, rope_parameters: { ...rope_scaling, rope_theta } }).config;
    expect(b.ropeScaling).toEqual(a.ropeScaling);
    expect(b.ropeTheta).toBe(500000);
    // The highest frequencies are kept, the lowest divided by the factor (transformers' llama3 rule).
    const plain = ropeTables(64, 2, 500000);
    const scaled = ropeTables(64, 2, 500000, a.ropeScaling);
    expect(scaled.sin[32]).toBe(plain.sin[32]);
    const lowPlain = Math.asin(plain.sin[63]!);
    expect(Math.asin(scaled.sin[63]!)).toBeCloseTo(lowPlain / 32, 10);
  });

  it('names the field it cannot support', () => {
    const err = (j: object) => {
      try {
        parseHfConfig(j);
      } catch (e) {
        expect(e).toBeInstanceOf(ModelFormatError);
        return (e as Error).message;
      }
      return 'no error';
    };
    expect(err({ ...smollm, architectures: ['GPT2LMHeadModel'] })).toMatch(/architectures \["GPT2LMHeadModel"\] is not supported/);
    expect(err({ ...smollm, rope_scaling: { rope_type: 'yarn', factor: 4 } })).toMatch(/rope_scaling.rope_type "yarn" is not supported/);
    expect(err({ ...smollm, rope_parameters: { rope_type: 'dynamic', rope_theta: 1 } })).toMatch(/rope_parameters.rope_type "dynamic"/);
    expect(err({ ...smollm, hidden_act: 'gelu' })).toMatch(/hidden_act "gelu"/);
    expect(err({ ...smollm, mlp_bias: true })).toMatch(/mlp_bias true is not supported/);
    expect(err({ ...smollm, quantization_config: { quant_method: 'awq' } })).toMatch(/quantization_config/);
    expect(err({ ...smollm, num_key_value_heads: 4 })).toMatch(/num_key_value_heads \(4\) must divide/);
    expect(err({ ...smollm, hidden_size: undefined })).toMatch(/hidden_size is missing/);
    expect(err({ ...smollm, intermediate_size: 1.5 })).toMatch(/intermediate_size must be a positive integer/);
  });
});
