/**
 * A SentencePiece GGUF tokenizer as a chat fine-tune ships it: llama2.c's tokenizer.bin pieces
 * (tok512) plus added tokens (control `[INST]`, `[/INST]`, `<|user|>`, `<|assistant|>`;
 * user-defined `<tool>`), with the chat templates TinyLlama-1.1B-Chat and Mistral-7B-Instruct
 * (Llama 2's [INST] format) ship in their tokenizer_config.json.
 */
import { GGUFValueType } from '@huggingface/gguf';
import type { GgufKv } from '../../src/model/formats/gguf-write.js';
import { ggufTokenizerMetadata, TOKEN_TYPE } from '../../src/model/tokenizer/gguf-tokenizer.js';
import type { Tokenizer } from '../../src/model/tokenizer/tokenizer.js';

export const ADDED_TOKENS: readonly (readonly [string, number])[] = [
  ['[INST]', TOKEN_TYPE.control], ['[/INST]', TOKEN_TYPE.control], ['<|user|>', TOKEN_TYPE.control], ['<|assistant|>', TOKEN_TYPE.control], ['<tool>', TOKEN_TYPE.userDefined],
];

/** TinyLlama-1.1B-Chat-v1.0's chat_template. */
export const TINYLLAMA_TEMPLATE = "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}";
/** Mistral-7B-Instruct's chat_template (Llama 2's [INST] turns, BOS first). */
export const INST_TEMPLATE = "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}";

/** The `tokenizer.ggml.*` keys of `tok` with `added` appended (ids from tok.vocabSize on) and the template, if any. */
export function spmChatKv(tok: Tokenizer, chatTemplate?: string, added: readonly (readonly [string, number])[] = ADDED_TOKENS): GgufKv {
  const t = ggufTokenizerMetadata(tok);
  const array = (value: (string | number)[], subType: GGUFValueType) => ({ value, type: GGUFValueType.ARRAY, subType });
  return {
    'tokenizer.ggml.model': { value: 'llama', type: GGUFValueType.STRING },
    'tokenizer.ggml.tokens': array([...t.tokens, ...added.map(([text]) => text)], GGUFValueType.STRING),
    'tokenizer.ggml.scores': array([...t.scores, ...added.map(() => 0)], GGUFValueType.FLOAT32),
    'tokenizer.ggml.token_type': array([...t.types, ...added.map(([, type]) => type)], GGUFValueType.INT32),
    'tokenizer.ggml.bos_token_id': { value: 1, type: GGUFValueType.UINT32 },
    'tokenizer.ggml.eos_token_id': { value: 2, type: GGUFValueType.UINT32 },
    ...(chatTemplate !== undefined ? { 'tokenizer.chat_template': { value: chatTemplate, type: GGUFValueType.STRING } } : {}),
  };
}
