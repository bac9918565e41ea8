/**
 * The tokenizer an engine drives: llama2.c's `tokenizer.bin` or a Hugging Face `tokenizer.json`,
 * told apart by their bytes, or the one in a GGUF's metadata, behind the scheduler's `TokenizerLike`.
 */
import { TokenizerFormatError } from '../errors.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import { HfTokenizer, type ChatMessage } from '../model/tokenizer/hf-tokenizer.js';
import { ggufChatTemplate, ggufTokenizer } from '../model/tokenizer/gguf-tokenizer.js';
import { ggufBpeTokenizer } from '../model/tokenizer/gguf-bpe.js';
import type { MetadataValue } from '@huggingface/gguf';
import type { TokenizerLike } from './scheduler.js';

export interface EngineTokenizer extends TokenizerLike {
  /** The chat as one prompt (tokenizer_config.json's chat_template); absent without a template. */
  applyChatTemplate?(messages: readonly ChatMessage[]): string;
}

/** llama2.c's tokenizer as an EngineTokenizer (stops on its BOS/EOS, the scheduler's default). */
export function llama2cTokenizer(t: Tokenizer): EngineTokenizer {
  return { encode: (text, bos, eos) => t.encode(text, bos, eos), decodeBytes: (prev, token) => t.decode(prev, token) };
}

export interface HfTokenizerFiles {
  /** tokenizer_config.json, parsed (chat template, bos/eos tokens). */
  config?: unknown;
  /** The model's EOS ids (generation_config.json or config.json). */
  eosTokenIds?: readonly number[];
}

/** True when the bytes are a JSON object (tokenizer.json); tokenizer.bin starts with an int32. */
function looksLikeJson(bytes: Uint8Array): boolean {
  for (const b of bytes.subarray(0, 64)) {
    if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) continue;
    return b === 0x7b;
  }
  return false;
}

/** Parses a tokenizer file of either kind for a model with `vocabSize` rows of embedding. */
export function parseTokenizer(bytes: Uint8Array, vocabSize: number, hf: HfTokenizerFiles = {}): EngineTokenizer {
  if (!looksLikeJson(bytes)) return llama2cTokenizer(Tokenizer.parse(bytes, vocabSize));
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new TokenizerFormatError(`tokenizer.json is not valid JSON (${(e as Error).message})`);
  }
  return hfEngineTokenizer(new HfTokenizer(json, hf.config, hf.eosTokenIds), vocabSize);
}

/** A Hugging Face tokenizer (from tokenizer.json or a GGUF's metadata) as an EngineTokenizer. */
export function hfEngineTokenizer(t: HfTokenizer, vocabSize: number): EngineTokenizer {
  // A model may pad its embedding past the tokenizer's vocabulary (Qwen2), never the reverse.
  if (t.vocabSize > vocabSize) {
    throw new TokenizerFormatError(`tokenizer.json has ${t.vocabSize} tokens but the model's vocabulary is ${vocabSize}`);
  }
  return {
    encode: (text, bos, eos) => t.encode(text, bos, eos),
    decodeBytes: (prev, token) => (token >= t.vocabSize && token < vocabSize ? new Uint8Array(0) : t.decodeBytes(prev, token)),
    stopTokens: t.stopTokens,
    ...(t.hasChatTemplate ? { applyChatTemplate: (messages: readonly ChatMessage[]) => t.applyChatTemplate(messages) } : {}),
  };
}

/**
 * The tokenizer in a GGUF's metadata: SentencePiece ("llama") as llama2.c's BPE, byte-level BPE
 * ("gpt2") through @huggingface/tokenizers; either with its chat template, the BPE one with its
 * end-of-generation ids too.
 */
export function ggufEngineTokenizer(meta: Readonly<Record<string, MetadataValue>>, vocabSize: number): EngineTokenizer {
  if (meta['tokenizer.ggml.model'] === 'gpt2') return hfEngineTokenizer(ggufBpeTokenizer(meta, vocabSize), vocabSize);
  const template = ggufChatTemplate(meta);
  return { ...llama2cTokenizer(ggufTokenizer(meta, vocabSize)), ...(template ? { applyChatTemplate: (m: readonly ChatMessage[]) => template.render(m) } : {}) };
}
