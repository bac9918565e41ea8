/**
 * Hugging Face `config.json` (and `generation_config.json`) → ModelConfig, for the Llama-family
 * architectures the kernels run as they are: LlamaForCausalLM, MistralForCausalLM,
 * Qwen2ForCausalLM (q/k/v biases) and Qwen3ForCausalLM (per-head q/k RMSNorm, its own head_dim). Anything that would change the maths and is not supported
 * fails with a ModelFormatError naming the field, rather than loading and generating nonsense.
 */
import { ModelFormatError } from '../../errors.js';
import type { ModelConfig, RopeScaling } from '../config.js';

export const SUPPORTED_ARCHITECTURES = ['LlamaForCausalLM', 'MistralForCausalLM', 'Qwen2ForCausalLM', 'Qwen3ForCausalLM'] as const;
export type HfArchitecture = (typeof SUPPORTED_ARCHITECTURES)[number];

/** The attention kernel keeps a head in registers: larger heads are not supported. */
export const MAX_HEAD_SIZE = 256;

export interface HfModelConfig {
  config: ModelConfig;
  architecture: HfArchitecture;
  /** Attention only sees this many past positions (Mistral); the context must not exceed it. */
  slidingWindow?: number;
  bosTokenId?: number;
  /** Token ids that end a generation (config.json's, unless generation_config.json gives them). */
  eosTokenIds: number[];
}

const REMEDY = 'This model is not supported: use a Llama, Mistral, Qwen2 or Qwen3 model without that setting';

type Json = Record<string, unknown>;

function fail(field: string, message: string, remedy = REMEDY): never {
  throw new ModelFormatError(`config.json: ${field} ${message}`, remedy);
}

function positiveInt(j: Json, field: string, fallback?: number): number {
  const v = j[field] ?? fallback;
  if (v === undefined) fail(field, 'is missing', 'Use the config.json that came with the model');
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) fail(field, `must be a positive integer, got ${JSON.stringify(v)}`, 'Use the config.json that came with the model');
  return v;
}

function positiveNumber(j: Json, field: string, fallback: number): number {
  const v = j[field] ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) fail(field, `must be a positive number, got ${JSON.stringify(v)}`, 'Use the config.json that came with the model');
  return v;
}

function idList(v: unknown, field: string): number[] {
  if (v === undefined || v === null) return [];
  const list = Array.isArray(v) ? v : [v];
  if (!list.every((x) => Number.isSafeInteger(x) && (x as number) >= 0)) fail(field, `must be a token id or a list of them, got ${JSON.stringify(v)}`);
  return list as number[];
}

/**
 * RoPE frequencies: `rope_theta` + `rope_scaling` (transformers ≤ 4), or `rope_parameters`
 * (transformers 5, which moved the theta inside). Only the default and `llama3` types are
 * supported: the others change the frequencies with the position (dynamic, yarn, longrope).
 */
function ropeOf(j: Json): { theta: number; scaling?: RopeScaling } {
  const params = j.rope_parameters as Json | undefined | null;
  const field = params ? 'rope_parameters' : 'rope_scaling';
  const s = (params ?? j.rope_scaling) as Json | undefined | null;
  const theta = positiveNumber(params && params.rope_theta !== undefined ? params : j, 'rope_theta', 10000);
  if (s === undefined || s === null) return { theta };
  if (typeof s !== 'object' || Array.isArray(s)) fail(field, `must be an object, got ${JSON.stringify(s)}`);
  const type = s.rope_type ?? s.type ?? 'default';
  if (type === 'default') return { theta };
  if (type !== 'llama3') fail(`${field}.rope_type`, `${JSON.stringify(type)} is not supported (supported: default, llama3)`);
  const num = (k: string): number => {
    const v = s[k];
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) fail(`${field}.${k}`, `must be a positive number, got ${JSON.stringify(v)}`);
    return v;
  };
  const scaling: RopeScaling = {
    type: 'llama3',
    factor: num('factor'),
    lowFreqFactor: num('low_freq_factor'),
    highFreqFactor: num('high_freq_factor'),
    originalMaxPositionEmbeddings: num('original_max_position_embeddings'),
  };
  if (!(scaling.highFreqFactor > scaling.lowFreqFactor)) fail(`${field}.high_freq_factor`, `must exceed low_freq_factor (${scaling.lowFreqFactor}), got ${scaling.highFreqFactor}`);
  return { theta, scaling };
}

/**
 * Reads `config.json` (parsed) and, when given, `generation_config.json` (parsed; its
 * `eos_token_id` takes precedence, as in transformers' `generate`).
 */
export function parseHfConfig(json: unknown, generation?: unknown): HfModelConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) fail('', 'must be a JSON object', 'Use the config.json that came with the model');
  const j = json as Json;
  const archs = j.architectures;
  if (!Array.isArray(archs) || archs.length === 0) fail('architectures', 'is missing', 'Use the config.json that came with the model');
  const architecture = archs.find((a): a is HfArchitecture => (SUPPORTED_ARCHITECTURES as readonly string[]).includes(a as string));
  if (!architecture) fail('architectures', `${JSON.stringify(archs)} is not supported (supported: ${SUPPORTED_ARCHITECTURES.join(', ')})`);

  const act = j.hidden_act ?? j.hidden_activation ?? 'silu';
  if (act !== 'silu') fail('hidden_act', `${JSON.stringify(act)} is not supported (the MLP is SwiGLU: silu)`);
  if (j.quantization_config !== undefined) fail('quantization_config', 'is not supported: quantised safetensors cannot be loaded', 'Use the model\'s float16/bfloat16/float32 weights');
  if (j.partial_rotary_factor !== undefined && j.partial_rotary_factor !== 1) fail('partial_rotary_factor', `${JSON.stringify(j.partial_rotary_factor)} is not supported (RoPE covers the whole head)`);
  // Llama's (and Qwen3's) attention_bias puts a bias on q, k, v and o; mlp_bias on every MLP matrix.
  const attentionBias = architecture !== 'Qwen2ForCausalLM' && j.attention_bias === true;
  if (j.mlp_bias === true) fail('mlp_bias', 'true is not supported');

  const dim = positiveInt(j, 'hidden_size');
  const nHeads = positiveInt(j, 'num_attention_heads');
  const nKvHeads = positiveInt(j, 'num_key_value_heads', nHeads);
  if (nHeads % nKvHeads !== 0) fail('num_key_value_heads', `(${nKvHeads}) must divide num_attention_heads (${nHeads})`);
  const headDefault = dim % nHeads === 0 ? dim / nHeads : undefined;
  const headSize = positiveInt(j, 'head_dim', headDefault);
  if (headSize % 2 !== 0) fail('head_dim', `must be even for RoPE, got ${headSize}`);
  if (headSize > MAX_HEAD_SIZE) fail('head_dim', `${headSize} is larger than the ${MAX_HEAD_SIZE} the attention kernel supports`);
  const { theta, scaling } = ropeOf(j);

  const config: ModelConfig = {
    dim,
    hiddenDim: positiveInt(j, 'intermediate_size'),
    nLayers: positiveInt(j, 'num_hidden_layers'),
    nHeads,
    nKvHeads,
    vocabSize: positiveInt(j, 'vocab_size'),
    seqLen: positiveInt(j, 'max_position_embeddings', 2048),
    headSize,
    sharedClassifier: j.tie_word_embeddings === true,
    normEps: positiveNumber(j, 'rms_norm_eps', 1e-6),
    ropeTheta: theta,
    ropeStyle: 'rotate_half',
    ...(scaling ? { ropeScaling: scaling } : {}),
    ...(architecture === 'Qwen2ForCausalLM' || attentionBias ? { qkvBias: true } : {}),
    ...(attentionBias ? { outBias: true } : {}),
    ...(architecture === 'Qwen3ForCausalLM' ? { qkNorm: true } : {}),
  };

  const useSliding = architecture === 'Qwen2ForCausalLM' || architecture === 'Qwen3ForCausalLM' ? j.use_sliding_window === true : true;
  const window = j.sliding_window;
  const slidingWindow = useSliding && typeof window === 'number' && window > 0 ? window : undefined;

  const gen = (typeof generation === 'object' && generation !== null ? generation : {}) as Json;
  const eos = idList(gen.eos_token_id ?? j.eos_token_id, gen.eos_token_id !== undefined ? 'generation_config.eos_token_id' : 'eos_token_id');
  const bos = idList(gen.bos_token_id ?? j.bos_token_id, 'bos_token_id')[0];
  return {
    config, architecture,
    ...(slidingWindow ? { slidingWindow } : {}),
    ...(bos !== undefined ? { bosTokenId: bos } : {}),
    eosTokenIds: eos,
  };
}
