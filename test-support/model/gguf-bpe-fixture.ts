/**
 * A small Llama-3-like byte-level BPE vocabulary, in two forms: the `tokenizer.ggml.*` keys
 * convert_hf_to_gguf.py would write for it (tokens by id, types, "a b" merges) and the Hugging
 * Face tokenizer.json it would have been converted from (Llama 3's own pre-tokenizer regex, with
 * its inline case flag). Unit tests and e2e specs compare the two.
 */
import type { GgufBpeTokenizer } from '../../src/model/formats/gguf-write.js';

/** GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the rest for U+0100 on. */
export const BYTE_CHAR: readonly string[] = (() => {
  const keep = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let next = 0x100;
  return Array.from({ length: 256 }, (_, b) => String.fromCodePoint(keep(b) ? b : next++));
})();

/** Text as byte-level characters. */
export const byteText = (s: string): string => [...new TextEncoder().encode(s)].map((b) => BYTE_CHAR[b]!).join('');

export const SPECIALS = ['<|begin_of_text|>', '<|end_of_text|>', '<|eot_id|>', '<|start_header_id|>', '<|end_header_id|>'] as const;
/** A user-defined added token: matched in text, decoded as its text. */
export const USER_TOKEN = '<tool>';
/** Merged words; "Ġxyz" is in the vocabulary with no merges reaching it (only ignore_merges finds it). */
const WORDS = [' hello', 'hello', ' world', ' the', '123', '世界', ' 🙂'];
const UNREACHABLE = ' xyz';

export const LLAMA3_CHAT_TEMPLATE = "{{- bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + m['content'] + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

export interface BpeFixture {
  gguf: GgufBpeTokenizer;
  /** The equivalent tokenizer.json and tokenizer_config.json. */
  json: object;
  config: object;
  /** Token id of a byte-level piece or special token. */
  id(piece: string): number;
}

/** The fixture padded with unused `[PADn]` tokens to `vocabSize` (at least 291). */
export function bpeFixture(vocabSize = 320, pre = 'llama-bpe'): BpeFixture {
  const tokens: string[] = [...BYTE_CHAR];
  const merges: string[] = [];
  for (const w of WORDS) {
    const chars = [...byteText(w)];
    let acc = chars[0]!;
    for (const ch of chars.slice(1)) {
      if (!merges.includes(`${acc} ${ch}`)) merges.push(`${acc} ${ch}`);
      acc += ch;
      if (!tokens.includes(acc)) tokens.push(acc);
    }
  }
  tokens.push(byteText(UNREACHABLE));
  const normal = tokens.length;
  tokens.push(...SPECIALS, USER_TOKEN);
  if (tokens.length > vocabSize) throw new RangeError(`the fixture needs ${tokens.length} tokens`);
  while (tokens.length < vocabSize) tokens.push(`[PAD${tokens.length}]`);
  const types = tokens.map((t, i) => (i < normal ? 1 : i < normal + SPECIALS.length ? 3 : t === USER_TOKEN ? 4 : 5));
  const id = (piece: string) => {
    const i = tokens.indexOf(piece);
    if (i < 0) throw new RangeError(`no token ${piece}`);
    return i;
  };
  const vocab: Record<string, number> = {};
  tokens.slice(0, normal).forEach((t, i) => (vocab[t] = i));
  const added = tokens.flatMap((t, i) => (types[i] === 3 || types[i] === 4 ? [{ id: i, content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: types[i] === 3 }] : []));
  const bos = id('<|begin_of_text|>');
  return {
    gguf: { tokens, types, merges, pre, bos, eos: id('<|end_of_text|>'), chatTemplate: LLAMA3_CHAT_TEMPLATE },
    json: {
      version: '1.0',
      added_tokens: added,
      normalizer: null,
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Split', pattern: { Regex: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" }, behavior: 'Isolated', invert: false },
          { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
        ],
      },
      post_processor: {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
        special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [bos], tokens: ['<|begin_of_text|>'] } },
      },
      decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: true, vocab, merges },
    },
    config: { bos_token: '<|begin_of_text|>', eos_token: '<|end_of_text|>', chat_template: LLAMA3_CHAT_TEMPLATE },
    id,
  };
}

interface TokenizerJsonLike {
  model: { vocab: Record<string, number>; merges: (string | [string, string])[] };
  added_tokens: { id: number; content: string; special: boolean }[];
}

/**
 * The `tokenizer.ggml.*` keys convert_hf_to_gguf.py writes for a tokenizer.json (get_vocab_base):
 * tokens by id with [PADi] in the gaps, added tokens CONTROL when special or `<|...|>`-shaped,
 * else USER_DEFINED, the rest NORMAL; merges as "a b".
 */
export function ggufFormOf(tj: TokenizerJsonLike, rest: Omit<GgufBpeTokenizer, 'tokens' | 'types' | 'merges'>): GgufBpeTokenizer {
  const byId = new Map<number, string>();
  for (const [t, id] of Object.entries(tj.model.vocab)) byId.set(id, t);
  const added = new Map(tj.added_tokens.map((a) => [a.id, a]));
  for (const a of tj.added_tokens) byId.set(a.id, a.content);
  let n = 0;
  for (const id of byId.keys()) n = Math.max(n, id + 1);
  const tokens: string[] = [];
  const types: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = byId.get(i);
    const a = added.get(i);
    tokens.push(t ?? `[PAD${i}]`);
    types.push(t === undefined ? 5 : !a ? 1 : a.special || (t.startsWith('<|') && t.endsWith('|>')) ? 3 : 4);
  }
  return { tokens, types, merges: tj.model.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m)), ...rest };
}
