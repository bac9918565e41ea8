/**
 * The tokenizer a GGUF file carries in its metadata, for `tokenizer.ggml.model` "llama"
 * (SentencePiece BPE): `tokens`, `scores` and `token_type` hold what llama2.c's tokenizer.bin
 * holds (pieces and merge scores), so they become the same `Tokenizer` and encode as run.c does.
 *
 * SentencePiece writes a space as "▁" (U+2581) inside pieces, where tokenizer.bin has " ".
 * Control, user-defined and unknown tokens ("<s>", "[INST]") are split out of text before BPE,
 * as llama.cpp does, so a `tokenizer.chat_template` (`ggufChatTemplate`) renders into their ids;
 * control tokens decode to nothing. llama2.c's BPE takes BOS = 1, EOS = 2 and the byte pieces
 * <0x00>..<0xFF> at ids 3..258, as every SentencePiece Llama vocabulary has.
 */
import type { MetadataValue } from '@huggingface/gguf';
import { TokenizerFormatError } from '../../errors.js';
import { BOS, EOS, Tokenizer } from './tokenizer.js';
import { ChatTemplate } from './chat-template.js';

/** GGUF token_type values (llama.cpp's llama_token_type). */
export const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

const SPACE = '\u2581';
const enc = new TextEncoder();

function array(meta: Readonly<Record<string, MetadataValue>>, key: string): MetadataValue[] {
  const v = meta[key];
  if (!Array.isArray(v)) throw new TokenizerFormatError(`the GGUF metadata lacks ${key}`, 'Pass tokenizer: the model\'s tokenizer.json or tokenizer.bin');
  return v;
}

/** The GGUF's own tokenizer, for a model with `vocabSize` embedding rows. */
export function ggufTokenizer(meta: Readonly<Record<string, MetadataValue>>, vocabSize: number): Tokenizer {
  const model = meta['tokenizer.ggml.model'];
  if (model === undefined) throw new TokenizerFormatError('the GGUF carries no tokenizer (tokenizer.ggml.model)', 'Pass tokenizer: the model\'s tokenizer.json or tokenizer.bin');
  if (model !== 'llama') {
    throw new TokenizerFormatError(`the GGUF's tokenizer is "${String(model)}"; webgpu-tp reads the SentencePiece "llama" and byte-level BPE "gpt2" ones from GGUF`, 'Pass tokenizer: the model\'s tokenizer.json');
  }
  const tokens = array(meta, 'tokenizer.ggml.tokens');
  const scores = array(meta, 'tokenizer.ggml.scores');
  if (tokens.length !== vocabSize) {
    throw new TokenizerFormatError(`the GGUF's tokenizer has ${tokens.length} tokens but token_embd has ${vocabSize} rows`, 'The file is inconsistent; convert the model again');
  }
  if (scores.length !== tokens.length) throw new TokenizerFormatError(`the GGUF's tokenizer has ${tokens.length} tokens but ${scores.length} scores`);
  for (const [key, want] of [['tokenizer.ggml.bos_token_id', BOS], ['tokenizer.ggml.eos_token_id', EOS]] as const) {
    const id = meta[key];
    if (id !== undefined && Number(id) !== want) {
      throw new TokenizerFormatError(`the GGUF's ${key} is ${String(id)}; llama2.c's BPE expects ${want}`, 'Pass tokenizer: the model\'s tokenizer.json');
    }
  }
  const pieces = tokens.map((t, i) => {
    if (typeof t !== 'string') throw new TokenizerFormatError(`GGUF token ${i} is not a string`);
    return enc.encode(t.replaceAll(SPACE, ' '));
  });
  const s = new Float32Array(scores.map((x, i) => {
    if (typeof x !== 'number') throw new TokenizerFormatError(`GGUF token ${i}'s score is not a number`);
    return x;
  }));
  for (let b = 0; b < 256; b++) {
    const want = `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;
    if (tokens[3 + b] !== want) {
      throw new TokenizerFormatError(`GGUF token ${3 + b} is "${String(tokens[3 + b])}", expected the byte piece ${want}`, 'Only SentencePiece vocabularies with byte fallback at ids 3..258 are read from GGUF; pass tokenizer.json instead');
    }
  }
  const maxLen = pieces.reduce((m, p) => Math.max(m, p.byteLength), 1);
  const rawTypes = meta['tokenizer.ggml.token_type'];
  const types = Array.isArray(rawTypes) ? rawTypes.map(Number) : [];
  if (types.length > 0 && types.length !== tokens.length) throw new TokenizerFormatError(`the GGUF's tokenizer has ${tokens.length} tokens but ${types.length} token types`);
  const ids = (want: readonly number[]) => types.flatMap((t, id) => (want.includes(t) ? [id] : []));
  return new Tokenizer(pieces, s, maxLen, {
    matched: ids([TOKEN_TYPE.control, TOKEN_TYPE.userDefined, TOKEN_TYPE.unknown]),
    silent: ids([TOKEN_TYPE.control]),
  });
}

/** A SentencePiece GGUF's `tokenizer.chat_template`, with its BOS and EOS texts; undefined without one. */
export function ggufChatTemplate(meta: Readonly<Record<string, MetadataValue>>): ChatTemplate | undefined {
  const tokens = meta['tokenizer.ggml.tokens'];
  const text = (id: number) => (Array.isArray(tokens) && typeof tokens[id] === 'string' ? tokens[id] : undefined);
  return ChatTemplate.from(meta['tokenizer.chat_template'], { bos: text(BOS), eos: text(EOS) }, 'the GGUF\'s tokenizer.chat_template');
}

/** `tokenizer.ggml.*` values for a llama2.c tokenizer (the GGUF writer's input). */
export function ggufTokenizerMetadata(t: Tokenizer): { tokens: string[]; scores: number[]; types: number[] } {
  const dec = new TextDecoder('utf-8', { fatal: true });
  const tokens: string[] = [];
  const types: number[] = [];
  t.pieces.forEach((p, i) => {
    // tokenizer.bin frames BOS/EOS as "\n<s>\n" / "\n</s>\n"; SentencePiece calls them <s>, </s>.
    if (i === 0) return void (tokens.push('<unk>'), types.push(TOKEN_TYPE.unknown));
    if (i === BOS) return void (tokens.push('<s>'), types.push(TOKEN_TYPE.control));
    if (i === EOS) return void (tokens.push('</s>'), types.push(TOKEN_TYPE.control));
    let text: string;
    try {
      text = dec.decode(p);
    } catch {
      throw new TokenizerFormatError(`piece ${i} is not valid UTF-8, which a GGUF token must be`);
    }
    tokens.push(text.replaceAll(' ', SPACE));
    types.push(/^<0x[0-9A-F]{2}>$/.test(text) ? TOKEN_TYPE.byte : TOKEN_TYPE.normal);
  });
  return { tokens, scores: Array.from(t.scores), types };
}
