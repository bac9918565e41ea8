import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { MetadataValue } from '@huggingface/gguf';
import { TokenizerFormatError } from '../../errors.js';
import { ggufEngineTokenizer } from '../../engine/tokenizers.js';
import { bpeFixture, byteText, BYTE_CHAR, LLAMA3_CHAT_TEMPLATE, USER_TOKEN } from '../../../test-support/model/gguf-bpe-fixture.js';
import { ggufBpeKv, type GgufBpeTokenizer } from '../formats/gguf-write.js';
import { ggufBpeFiles, ggufBpeTokenizer } from './gguf-bpe.js';
import { HfTokenizer } from './hf-tokenizer.js';

type Meta = Record<string, MetadataValue>;

/** The metadata values a GGUF reader hands back for these keys. */
function meta(t: GgufBpeTokenizer): Meta {
  return Object.fromEntries(Object.entries(ggufBpeKv(t)).map(([k, v]) => [k, v.value]));
}

const V = 320;
const fx = bpeFixture(V);
const byte = (s: string) => [...new TextEncoder().encode(s)].map((b) => fx.id(BYTE_CHAR[b]!));
const llama = ggufBpeTokenizer(meta(fx.gguf), V);
const withPre = (pre: string, extra: Partial<GgufBpeTokenizer> = {}) => ggufBpeTokenizer(meta({ ...fx.gguf, pre, ...extra }), V);

/** Text as the scheduler streams it: each token's bytes after the one before. */
function streamText(t: HfTokenizer, ids: number[]): string {
  const d = new TextDecoder();
  let out = '';
  ids.forEach((id, i) => (out += d.decode(t.decodeBytes(i ? ids[i - 1]! : -1, id), { stream: true })));
  return out + d.decode();
}

describe('GGUF byte-level BPE ("gpt2") tokenizer', () => {
  it('merges words by rank and adds BOS for llama-bpe (hand-derived)', () => {
    // "hello world" → pre-tokens "hello", " world"; each merges to one token
    expect(llama.encode('hello world', true)).toEqual([fx.id('<|begin_of_text|>'), fx.id('hello'), fx.id(byteText(' world'))]);
    expect(llama.encode(' hello the', false)).toEqual([fx.id(byteText(' hello')), fx.id(byteText(' the'))]);
    // no merge reaches "Ġxyz": Llama 3's ignore_merges takes the word whole, Qwen2 spells it in bytes
    expect(llama.encode(' xyz', false)).toEqual([fx.id(byteText(' xyz'))]);
    expect(withPre('qwen2').encode(' xyz', false)).toEqual(byte(' xyz'));
  });

  it('splits digits as each pre-tokenizer does: three at a time (llama-bpe, default), one at a time (qwen2, smollm)', () => {
    const threes = [fx.id('123'), ...byte('45')];
    expect(llama.encode('12345', false)).toEqual(threes);
    expect(withPre('default').encode('12345', false)).toEqual(threes);
    expect(withPre('qwen2').encode('12345', false)).toEqual(byte('12345'));
    expect(withPre('smollm').encode('12345', false)).toEqual(byte('12345'));
  });

  it('qwen2 normalises to NFC as its tokenizer.json does; llama-bpe does not', () => {
    const q = withPre('qwen2');
    expect(q.encode('cafe\u0301', false)).toEqual(q.encode('caf\u00e9', false));
    expect(llama.encode('cafe\u0301', false)).not.toEqual(llama.encode('caf\u00e9', false));
  });

  it('deepseek-r1-qwen (DeepSeek-R1\'s Qwen distills) is llama.cpp\'s qwen2 pre-tokenizer: the same ids for digits, NFC, specials and words', () => {
    const q = withPre('qwen2');
    const d = withPre('deepseek-r1-qwen');
    for (const s of ['12345', 'cafe\u0301 caf\u00e9', `hello world<|eot_id|> xyz${USER_TOKEN}`, ' the  \n\n 3.14 🙂', "I'm 'RE"]) {
      expect(d.encode(s, false), JSON.stringify(s)).toEqual(q.encode(s, false));
    }
    expect(d.encode('12345', false)).toEqual(byte('12345'));
    expect(d.encode('hi', true)).toEqual(byte('hi')); // no BOS unless add_bos_token says so, as qwen2
  });

  it('matches special and user-defined tokens in text; decodes control tokens to nothing and user-defined ones to their text', () => {
    const ids = llama.encode(`<|eot_id|>hi${USER_TOKEN}`, false);
    expect(ids).toEqual([fx.id('<|eot_id|>'), ...byte('hi'), fx.id(USER_TOKEN)]);
    expect(llama.decodeBytes(-1, ids[0]!)).toHaveLength(0);
    expect(new TextDecoder().decode(llama.decodeBytes(-1, ids.at(-1)!))).toBe(USER_TOKEN);
    expect(ggufEngineTokenizer(meta(fx.gguf), V).decodeBytes(-1, V - 1)).toHaveLength(0); // an unused [PAD] slot
  });

  it('round-trips non-ASCII text and emoji, a token at a time', () => {
    for (const t of [llama, withPre('qwen2'), withPre('smollm'), withPre('default')]) {
      for (const s of ['hello 世界 🙂 naïve café 👍🏽 😶‍🌫️', '  \n\n\t x', "I'VE 12345 ...!!"]) expect(streamText(t, t.encode(s, false))).toBe(s);
    }
  });

  it('encodes as @huggingface/tokenizers does from the equivalent tokenizer.json (Llama 3\'s regex, with its inline case flag)', () => {
    const hf = new HfTokenizer(fx.json, fx.config);
    const samples = ['hello world', ' hello the 世界 🙂', ' xyz xyz', "it'S we'LL I'd", '12345 3.14 1,000', '  \n\n   x\t\ty', '<|eot_id|> <|start_header_id|>user<|end_header_id|>', `a${USER_TOKEN}b`, 'Führer нещо 我想在apple工作'];
    for (const s of samples) {
      expect(llama.encode(s, true), s).toEqual(hf.encode(s, true));
      expect(llama.encode(s, false), s).toEqual(hf.encode(s, false));
    }
  });

  it('add_bos_token and add_eos_token override the pre-tokenizer\'s defaults', () => {
    const bos = fx.id('<|begin_of_text|>');
    const eos = fx.id('<|end_of_text|>');
    expect(withPre('llama-bpe', { addBos: false }).encode('hi', true)).toEqual(byte('hi'));
    expect(withPre('qwen2').encode('hi', true)).toEqual(byte('hi')); // Qwen2 adds no BOS
    expect(withPre('qwen2', { addBos: true, addEos: true }).encode('hi', true)).toEqual([bos, ...byte('hi'), eos]);
  });

  it('stops on EOS, EOT and the end-of-generation tokens llama.cpp knows by their text, EOS first', () => {
    const { stopIds } = ggufBpeFiles(meta(fx.gguf), V);
    expect(stopIds).toEqual([fx.id('<|end_of_text|>'), fx.id('<|eot_id|>')]);
    const noEos = ggufBpeFiles(meta({ ...fx.gguf, eos: undefined }), V);
    expect(noEos.stopIds).toEqual([fx.id('<|end_of_text|>'), fx.id('<|eot_id|>')]); // both found by text
    const eot = ggufBpeFiles(meta({ ...fx.gguf, eot: fx.id('<|start_header_id|>') }), V);
    expect(eot.stopIds).toContain(fx.id('<|start_header_id|>'));
    expect(llama.stopTokens).toEqual(stopIds);
  });

  it('renders tokenizer.chat_template as the same template does for an HF model; the engine tokenizer exposes it', () => {
    const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi 🙂' }];
    const want = '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi 🙂<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n';
    expect(llama.applyChatTemplate(messages)).toBe(want);
    expect(new HfTokenizer(fx.json, fx.config).applyChatTemplate(messages)).toBe(want);
    const engine = ggufEngineTokenizer({ ...meta(fx.gguf), 'tokenizer.ggml.model': 'gpt2' }, V);
    expect(engine.applyChatTemplate?.(messages)).toBe(want);
    expect(engine.encode(want, false, false)[0]).toBe(fx.id('<|begin_of_text|>'));
    expect(engine.stopTokens).toEqual([fx.id('<|end_of_text|>'), fx.id('<|eot_id|>')]);
    expect(ggufEngineTokenizer(meta({ ...fx.gguf, chatTemplate: undefined }), V).applyChatTemplate).toBeUndefined();
    expect(LLAMA3_CHAT_TEMPLATE).toContain('bos_token');
  });

  it('refuses an unknown tokenizer.ggml.pre, naming the field and the supported values', () => {
    for (const pre of ['gpt-2', 'deepseek-llm', 'qwen35']) {
      expect(() => withPre(pre)).toThrow(TokenizerFormatError);
      expect(() => withPre(pre)).toThrow(`tokenizer.ggml.pre is "${pre}"; webgpu-tp reads "llama-bpe", "qwen2", "smollm", "default"`);
    }
    const { 'tokenizer.ggml.pre': _, ...noPre } = meta(fx.gguf);
    expect(ggufBpeTokenizer(noPre, V).encode('12345', false)).toEqual(withPre('default').encode('12345', false)); // absent: llama.cpp's default
  });

  it('refuses metadata that does not describe a tokenizer for this model', () => {
    const m = meta(fx.gguf);
    expect(() => ggufBpeTokenizer(m, V + 1)).toThrow(/320 tokens but token_embd has 321 rows/);
    const { 'tokenizer.ggml.merges': _, ...noMerges } = m;
    expect(() => ggufBpeTokenizer(noMerges, V)).toThrow(/lacks tokenizer\.ggml\.merges/);
    expect(() => ggufBpeTokenizer({ ...m, 'tokenizer.ggml.merges': ['ab'] }, V)).toThrow(/merge 0 "ab" is not two tokens/);
    expect(() => ggufBpeTokenizer({ ...m, 'tokenizer.ggml.bos_token_id': 999 }, V)).toThrow(/bos_token_id is 999, outside its 320 tokens/);
    const { 'tokenizer.ggml.bos_token_id': __, ...noBos } = m;
    expect(() => ggufBpeTokenizer(noBos, V)).toThrow(/asks for a BOS token .* no tokenizer\.ggml\.bos_token_id/);
    const dup = [...fx.gguf.tokens];
    dup[300] = dup[0]!;
    expect(() => ggufBpeTokenizer(meta({ ...fx.gguf, tokens: dup, types: fx.gguf.types.map((t, i) => (i === 300 ? 1 : t)) }), V)).toThrow(/in the vocabulary twice/);
  });
});

describe('GGUF BPE tokenizer metadata, fuzzed', () => {
  /** Either a TokenizerFormatError, or a tokenizer whose ids stay in the vocabulary and decode. */
  function buildsOrRefuses(m: Meta, n: number): boolean {
    let t: HfTokenizer;
    try {
      t = ggufBpeTokenizer(m, n);
    } catch (e) {
      if (e instanceof TokenizerFormatError) return true;
      throw e;
    }
    for (const text of ['hello world 🙂 12345', '<|eot_id|>\n\n x', '']) {
      const ids = t.encode(text, true);
      for (const [i, id] of ids.entries()) {
        expect(Number.isInteger(id) && id >= 0 && id < n).toBe(true);
        t.decodeBytes(i ? ids[i - 1]! : -1, id);
      }
    }
    return true;
  }

  it('random keys and values never crash the reader or the tokenizer it builds', () => {
    const anyValue = fc.oneof(fc.string(), fc.integer({ min: -2, max: 400 }), fc.boolean(), fc.array(fc.oneof(fc.string({ maxLength: 6 }), fc.integer({ min: -1, max: 7 })), { maxLength: 12 }));
    const key = fc.constantFrom('tokenizer.ggml.pre', 'tokenizer.ggml.tokens', 'tokenizer.ggml.token_type', 'tokenizer.ggml.merges', 'tokenizer.ggml.bos_token_id', 'tokenizer.ggml.eos_token_id', 'tokenizer.ggml.eot_token_id', 'tokenizer.ggml.add_bos_token', 'tokenizer.ggml.add_eos_token', 'tokenizer.chat_template');
    const good = meta(fx.gguf);
    fc.assert(fc.property(fc.array(fc.tuple(key, anyValue), { maxLength: 3 }), fc.constantFrom(V, V - 1, 1), (edits, n) => {
      const m: Meta = { ...good };
      for (const [k, v] of edits) m[k] = v as MetadataValue;
      return buildsOrRefuses(m, n);
    }), { numRuns: 300, seed: 5 });
  });

  it('a random small vocabulary (tokens, types, merges) builds or is refused', () => {
    const vocab = fc.record({
      tokens: fc.uniqueArray(fc.string({ minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 40 }),
      types: fc.array(fc.integer({ min: 0, max: 7 }), { maxLength: 40 }),
      merges: fc.array(fc.tuple(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 })).map(([a, b]) => `${a} ${b}`), { maxLength: 30 }),
      pre: fc.constantFrom('llama-bpe', 'qwen2', 'smollm', 'default'),
      bos: fc.integer({ min: 0, max: 45 }),
    });
    fc.assert(fc.property(vocab, (v) => {
      const types = v.tokens.map((_, i) => v.types[i] ?? 1);
      return buildsOrRefuses(meta({ tokens: v.tokens, types, merges: v.merges, pre: v.pre, bos: v.bos, addBos: true }), v.tokens.length);
    }), { numRuns: 300, seed: 9 });
  });
});
