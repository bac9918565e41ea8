import { describe, expect, it } from 'vitest';
import { TokenizerFormatError } from '../../errors.js';
import { HfTokenizer } from './hf-tokenizer.js';
import { byteLevelTokenizer } from '../../../test-support/model/hf-testing.js';

/** A Llama-2-like BPE with byte fallback: ▁ word marks, <0xXX> tokens, BOS added by the post-processor. */
function byteFallbackTokenizer(): { json: object; config: object } {
  const vocab: Record<string, number> = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = 3 + b;
  for (const p of ['▁', 'H', 'e', 'l', 'o', 'w', 'r', 'd', '界', 'll', 'He', 'Hell', 'Hello', '▁Hello', 'or', '▁w', '▁wor']) vocab[p] ??= Object.keys(vocab).length;
  const merges = ['l l', 'H e', 'He ll', 'Hell o', '▁ Hello', 'o r', '▁ w', '▁w or'];
  const special = ['<unk>', '<s>', '</s>'].map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  return {
    json: {
      version: '1.0',
      added_tokens: special,
      normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
      pre_tokenizer: null,
      post_processor: {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
        special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
      },
      decoder: {
        type: 'Sequence',
        decoders: [
          { type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' },
          { type: 'Strip', content: ' ', start: 1, stop: 0 },
        ],
      },
      model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, vocab, merges },
    },
    config: { bos_token: '<s>', eos_token: '</s>', add_bos_token: true },
  };
}

/** Text as the scheduler streams it: each token's bytes after the one before. */
function streamText(t: HfTokenizer, ids: number[], prev: number): string {
  const d = new TextDecoder();
  let out = '';
  for (const id of ids) {
    out += d.decode(t.decodeBytes(prev, id), { stream: true });
    prev = id;
  }
  return out + d.decode();
}

const text = 'Say hello world, 世界! 🙂 naïve café 😀👍🏽 中文字符';

describe('HfTokenizer, byte-level BPE (Qwen2, Llama 3)', () => {
  const { json, config } = byteLevelTokenizer();
  const t = new HfTokenizer(json, config);

  it('round-trips text with emoji and CJK, whole and a token at a time', () => {
    const ids = t.encode(text, true);
    expect(ids.length).toBeLessThan(new TextEncoder().encode(text).length); // merges applied
    expect(ids).toContain(t.encode(' hello', false)[0]);
    expect(t.encode(' hello', false)).toHaveLength(1);
    expect(t.decode(ids)).toBe(text);
    expect(streamText(t, ids, -1)).toBe(text);
  });

  it('splits a multi-byte character over byte tokens without breaking the stream', () => {
    const ids = t.encode('é𝄞', false);
    expect(ids).toHaveLength(2 + 4); // no merges: one token per byte
    expect(new TextDecoder().decode(t.decodeBytes(-1, ids[0]!))).toBe('\uFFFD'); // half a character alone
    expect(streamText(t, ids, -1)).toBe('é𝄞');
  });

  it('stops on the eos token, renders the chat template, and hides special tokens in text', () => {
    expect(t.stopTokens).toEqual([t.encode('<|im_end|>', false)[0]]);
    expect(new HfTokenizer(json, config, [7, 9]).stopTokens).toEqual([7, 9]);
    expect(t.hasChatTemplate).toBe(true);
    const prompt = t.applyChatTemplate([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: '世界?' }]);
    expect(prompt).toBe('<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n世界?<|im_end|>\n<|im_start|>assistant\n');
    const ids = t.encode(prompt, false);
    expect(ids[0]).toBe(t.encode('<|im_start|>', false)[0]);
    expect(t.decodeBytes(-1, ids[0]!)).toHaveLength(0);
  });
});

describe('HfTokenizer, BPE with byte fallback (Llama 2)', () => {
  const { json, config } = byteFallbackTokenizer();
  const t = new HfTokenizer(json, config);

  it('adds BOS, merges words, falls back to bytes for unknown characters', () => {
    const ids = t.encode('Hello world 🙂', true);
    expect(ids[0]).toBe(1);
    expect(ids[1]).toBe(t.encode('Hello', false)[0]);
    expect(t.encode('Hello', false)).toHaveLength(1); // ▁Hello
    // 🙂 is F0 9F 99 82: four byte tokens
    expect(ids.slice(-4)).toEqual([0xf0 + 3, 0x9f + 3, 0x99 + 3, 0x82 + 3]);
    expect(t.stopTokens).toEqual([2]);
    expect(t.bosId).toBe(1);
  });

  it('round-trips emoji and CJK; the leading space after BOS is dropped as the decoder does', () => {
    const s = 'Hello 世界 world 🙂👍🏽';
    const ids = t.encode(s, true);
    expect(t.decode(ids)).toBe(s);
    expect(streamText(t, ids.slice(1), 1)).toBe(s);
  });

  it('refuses a tokenizer.json it cannot run', () => {
    expect(() => new HfTokenizer({ model: { type: 'Unigram', vocab: [] } })).toThrow(TokenizerFormatError);
    expect(() => new HfTokenizer({})).toThrow(/expected an object with a "model"/);
    expect(() => t.applyChatTemplate([])).toThrow(/no chat_template/);
  });
});
