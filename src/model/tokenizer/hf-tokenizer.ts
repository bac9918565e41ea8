/**
 * Hugging Face `tokenizer.json` tokenizers (BPE with byte fallback as in Llama 2, byte-level
 * BPE as in Qwen2 and Llama 3), through `@huggingface/tokenizers`: the pure-JS tokenizers of
 * transformers.js, without its ONNX runtime. Chat templates from `tokenizer_config.json` are
 * rendered with `@huggingface/jinja`.
 *
 * The scheduler streams text a token at a time and must never split a UTF-8 character, so it
 * asks for each token's raw bytes (`decodeBytes`) instead of decoded strings: the library's
 * own byte-level table turns a byte-level piece back into bytes, and `<0xXX>` / `▁` pieces of
 * a byte-fallback vocabulary become their byte and a space.
 */
import { Tokenizer as LibTokenizer, ByteLevelDecoder } from '@huggingface/tokenizers';
import { TokenizerFormatError } from '../../errors.js';
import { ChatTemplate, type ChatMessage } from './chat-template.js';

export type { ChatMessage };

type Json = Record<string, unknown>;

const BYTE_PIECE = /^<0x([0-9A-Fa-f]{2})>$/;
const METASPACE = '\u2581';

/** A special token's text: tokenizer_config.json gives either a string or {content: ...}. */
function tokenText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && v !== null && typeof (v as Json).content === 'string') return (v as Json).content as string;
  return undefined;
}

function decoderTypes(d: unknown): string[] {
  if (typeof d !== 'object' || d === null) return [];
  const j = d as Json;
  const inner = Array.isArray(j.decoders) ? j.decoders.flatMap(decoderTypes) : [];
  return [String(j.type), ...inner];
}

export class HfTokenizer {
  readonly vocabSize: number;
  readonly bosId: number | undefined;
  /** Tokens that end a generation: the model's EOS ids, else the tokenizer's eos_token. */
  readonly stopTokens: readonly number[];
  private readonly lib: LibTokenizer;
  /** Piece bytes by id, built on first use. */
  private readonly pieceCache = new Map<number, Uint8Array>();
  private readonly byteDecoder: Record<string, number> | undefined;
  private readonly special = new Set<number>();
  private readonly added = new Map<number, string>();
  private readonly template: ChatTemplate | undefined;

  /**
   * `tokenizerJson` and `tokenizerConfig` parsed; `eosIds` from generation_config.json or
   * config.json (the tokenizer's eos_token is the fallback).
   */
  constructor(tokenizerJson: unknown, tokenizerConfig: unknown = {}, eosIds: readonly number[] = []) {
    const tj = tokenizerJson as Json;
    const model = tj?.model as Json | undefined;
    if (typeof tj !== 'object' || tj === null || typeof model !== 'object' || model === null) {
      throw new TokenizerFormatError('tokenizer.json: expected an object with a "model"', 'Use the tokenizer.json that came with the model');
    }
    if (model.type !== 'BPE') {
      throw new TokenizerFormatError(`tokenizer.json: model type ${JSON.stringify(model.type)} is not supported (supported: BPE)`, 'Use a BPE tokenizer (Llama, Mistral, Qwen2)');
    }
    const cfg = (typeof tokenizerConfig === 'object' && tokenizerConfig !== null ? tokenizerConfig : {}) as Json;
    try {
      this.lib = new LibTokenizer(tj, cfg);
    } catch (e) {
      throw new TokenizerFormatError(`tokenizer.json could not be read: ${(e as Error).message}`, 'Use the tokenizer.json that came with the model');
    }
    for (const [id, t] of this.lib.get_added_tokens_decoder()) {
      this.added.set(id, t.content);
      if (t.special) this.special.add(id);
    }
    let maxId = -1;
    for (const id of this.lib.get_vocab(true).values()) maxId = Math.max(maxId, id);
    this.vocabSize = maxId + 1;
    if (decoderTypes(tj.decoder).includes('ByteLevel')) this.byteDecoder = new ByteLevelDecoder({ type: 'ByteLevel' } as ConstructorParameters<typeof ByteLevelDecoder>[0]).byte_decoder;

    const bosText = tokenText(cfg.bos_token);
    const eosText = tokenText(cfg.eos_token);
    this.bosId = bosText !== undefined ? this.lib.token_to_id(bosText) : undefined;
    const eosFallback = eosText !== undefined ? this.lib.token_to_id(eosText) : undefined;
    this.stopTokens = eosIds.length ? [...eosIds] : eosFallback !== undefined ? [eosFallback] : [];

    this.template = ChatTemplate.from(cfg.chat_template, { bos: bosText, eos: eosText }, 'tokenizer_config.json: the chat_template');
  }

  /** True when tokenizer_config.json has a chat template. */
  get hasChatTemplate(): boolean {
    return this.template !== undefined;
  }

  /** Token ids of `text`; `bos` adds the tokenizer's special tokens (Llama's BOS; Qwen2 has none). */
  encode(text: string, bos = true, eos = false): number[] {
    const ids = this.lib.encode(text, { add_special_tokens: bos }).ids;
    if (eos && this.stopTokens.length) ids.push(this.stopTokens[0]!);
    return ids;
  }

  /**
   * The chat as the model was trained to see it, ending with the assistant's turn opened
   * (`add_generation_prompt`). The rendered text carries its own BOS where the template puts one.
   */
  applyChatTemplate(messages: readonly ChatMessage[], extra: Json = {}): string {
    if (!this.template) throw new TokenizerFormatError('tokenizer_config.json has no chat_template', 'Use completions with a plain prompt, or a model with a chat template');
    return this.template.render(messages, extra);
  }

  /** Raw bytes of `token` as generated text; special tokens are empty. */
  decodeBytes(prev: number, token: number): Uint8Array {
    if (!Number.isInteger(token) || token < 0 || token >= this.vocabSize) {
      throw new RangeError(`token ${token} is outside the vocabulary [0, ${this.vocabSize})`);
    }
    const bytes = this.pieceBytes(token);
    // A byte-fallback vocabulary marks word starts with ▁: the first word after BOS drops it.
    return !this.byteDecoder && prev === this.bosId && bytes[0] === 0x20 ? bytes.subarray(1) : bytes;
  }

  /** Text of `ids` through the library's full decoder (special tokens skipped). */
  decode(ids: readonly number[]): string {
    return this.lib.decode([...ids], { skip_special_tokens: true });
  }

  private pieceBytes(id: number): Uint8Array {
    let b = this.pieceCache.get(id);
    if (b) return b;
    if (this.special.has(id)) b = new Uint8Array(0);
    else if (this.added.has(id)) b = new TextEncoder().encode(this.added.get(id)!);
    else {
      const piece = this.lib.id_to_token(id) ?? '';
      if (this.byteDecoder) {
        const dec = this.byteDecoder;
        b = Uint8Array.from([...piece], (c) => Number(dec[c] ?? 0x3f)); // the table holds byte values as strings
      } else {
        const m = BYTE_PIECE.exec(piece);
        b = m ? Uint8Array.of(parseInt(m[1]!, 16)) : new TextEncoder().encode(piece.replaceAll(METASPACE, ' '));
      }
    }
    this.pieceCache.set(id, b);
    return b;
  }
}
