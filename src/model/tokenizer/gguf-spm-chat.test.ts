import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { MetadataValue } from '@huggingface/gguf';
import { TokenizerFormatError } from '../../errors.js';
import { modelsDir } from '../../../test-support/fixtures/paths.js';
import { ggufEngineTokenizer } from '../../engine/tokenizers.js';
import { Tokenizer } from './tokenizer.js';
import { ggufTokenizer } from './gguf-tokenizer.js';
import { ADDED_TOKENS, INST_TEMPLATE, spmChatKv, TINYLLAMA_TEMPLATE } from '../../../test-support/model/spm-chat-fixture.js';

/** SentencePiece GGUFs with chat templates: tok512 plus a fine-tune's added tokens (test-support/model/spm-chat-fixture.ts). */
const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
const V = 512 + ADDED_TOKENS.length;
const id = (text: string) => 512 + ADDED_TOKENS.findIndex(([t]) => t === text);

/** The metadata values a GGUF reader hands back for these keys. */
function meta(chatTemplate?: string, added = ADDED_TOKENS): Record<string, MetadataValue> {
  return Object.fromEntries(Object.entries(spmChatKv(tok, chatTemplate, added)).map(([k, v]) => [k, v.value]));
}

/** run.c's encoding of each stretch of text on its own (its dummy prefix each time), special ids between. */
const stretches = (...parts: (string | number)[]) => parts.flatMap((p) => (typeof p === 'number' ? [p] : tok.encode(p, false)));
const messages = [{ role: 'user', content: 'Hi there' }, { role: 'assistant', content: 'Hello.' }, { role: 'user', content: 'Tell a story' }];

describe('SentencePiece GGUF tokenizer: special tokens and chat templates', () => {
  const t = ggufTokenizer(meta(), V);

  it('text without special tokens encodes exactly as run.c (tok512.bin) does', () => {
    for (const s of ['Once upon a time, there was a little girl.', 'Lily said "hi!"\nTim ran 123 ünïcödé 🙂', ' ', '']) {
      expect(t.encode(s, true, false), JSON.stringify(s)).toEqual(tok.encode(s, true, false));
    }
  });

  it('splits control, user-defined and unknown tokens out of the text before BPE: each stretch between is run.c\'s encoding of it', () => {
    expect(t.encode('[INST] Hello [/INST]', false)).toEqual(stretches(id('[INST]'), ' Hello ', id('[/INST]')));
    expect(t.encode('a</s>b<s>c<unk>', true)).toEqual([1, ...stretches('a', 2, 'b', 1, 'c', 0)]);
    expect(t.encode('<tool>[INST][INST]x', false)).toEqual([id('<tool>'), id('[INST]'), id('[INST]'), ...tok.encode('x', false)]);
    // the longer token wins where one contains another ([/INST] holds "INST]"-like text, not [INST])
    expect(t.encode('[/INST][INST', false)).toEqual(stretches(id('[/INST]'), '[INST'));
  });

  it('control tokens decode to nothing, user-defined ones to their text', () => {
    for (const c of [1, 2, id('[INST]'), id('<|assistant|>')]) expect(t.decode(3, c), String(c)).toHaveLength(0);
    expect(new TextDecoder().decode(t.decode(3, id('<tool>')))).toBe('<tool>');
    // the control tokens vanish; each stretch after one keeps its dummy-prefix space, as llama.cpp prints it
    expect(t.decodeText(t.encode('[INST] Hello [/INST] there', false))).toBe(' ' + ' Hello ' + ' ' + ' there');
  });

  it('renders TinyLlama\'s template with the GGUF\'s eos_token and encodes it into <|user|>, </s> and <|assistant|> ids', () => {
    const e = ggufEngineTokenizer(meta(TINYLLAMA_TEMPLATE), V);
    const text = e.applyChatTemplate!(messages);
    expect(text).toBe('<|user|>\nHi there</s>\n<|assistant|>\nHello.</s>\n<|user|>\nTell a story</s>\n<|assistant|>\n');
    expect(e.encode(text, false, false)).toEqual(stretches(
      id('<|user|>'), '\nHi there', 2, '\n', id('<|assistant|>'), '\nHello.', 2, '\n', id('<|user|>'), '\nTell a story', 2, '\n', id('<|assistant|>'), '\n',
    ));
  });

  it('renders the [INST] template with its bos_token: the prompt starts with BOS and each turn\'s control tokens', () => {
    const e = ggufEngineTokenizer(meta(INST_TEMPLATE), V);
    const text = e.applyChatTemplate!(messages);
    expect(text).toBe('<s>[INST] Hi there [/INST]Hello.</s>[INST] Tell a story [/INST]');
    expect(e.encode(text, false, false)).toEqual(stretches(1, id('[INST]'), ' Hi there ', id('[/INST]'), 'Hello.', 2, id('[INST]'), ' Tell a story ', id('[/INST]')));
    // the same template on a vocabulary without [INST] tokens spells them as text (Llama 2)
    const plain = ggufEngineTokenizer(meta(INST_TEMPLATE, []), 512);
    expect(plain.encode(plain.applyChatTemplate!(messages), false, false)).toEqual(stretches(1, '[INST] Hi there [/INST]Hello.', 2, '[INST] Tell a story [/INST]'));
  });

  it('has no chat template without tokenizer.chat_template, and refuses one that does not parse', () => {
    expect(ggufEngineTokenizer(meta(), V).applyChatTemplate).toBeUndefined();
    expect(() => ggufEngineTokenizer(meta('{% for m in messages %}'), V)).toThrow(TokenizerFormatError);
    expect(() => ggufEngineTokenizer(meta('{% for m in messages %}'), V)).toThrow(/tokenizer\.chat_template does not parse/);
    expect(() => ggufTokenizer({ ...meta(), 'tokenizer.ggml.token_type': [1, 2, 3] }, V)).toThrow(/517 tokens but 3 token types/);
  });
});
