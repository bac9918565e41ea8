/**
 * llama2.c's `tokenizer.bin` and its BPE, matching run.c's `encode`/`decode` token for token.
 *
 * File: int32 max_token_length, then exactly vocab_size entries of
 * { f32 score, int32 len, len bytes }. The file stores no count, so the model supplies it.
 *
 * Pieces are raw bytes (not necessarily valid UTF-8: a piece can be half a code point), so
 * `decode` returns bytes and the caller assembles text (see `Utf8Stream`).
 *
 * A SentencePiece vocabulary from a GGUF also names special tokens (`SpecialTokens`): their text
 * is split out of the input before BPE, as llama.cpp does, so a chat template's `</s>` or
 * `[INST]` becomes its one token; every other stretch of text is encoded as run.c encodes a
 * whole prompt (with its dummy-prefix space).
 */
import { TokenizerFormatError } from '../../errors.js';

export const BOS = 1;
export const EOS = 2;
/** Byte-fallback pieces `<0x00>`..`<0xFF>` sit after <unk>, <s>, </s>. */
const BYTE_TOKEN_OFFSET = 3;

const BYTE_PIECE = /^<0x([0-9A-Fa-f]{2})>$/;

/** Bytes as a binary (latin1) string: one char per byte, so lookups and concatenation are exact. */
function binaryKey(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]!);
  return s;
}

/** The tokenizer file holds `found` while the model's vocabulary has `vocabSize` tokens. */
function vocabMismatch(found: string, vocabSize: number): TokenizerFormatError {
  return new TokenizerFormatError(
    `the vocab sizes do not match: the tokenizer has ${found} but the model's vocab is ${vocabSize}`,
    `Use the tokenizer exported with this model (one with exactly ${vocabSize} entries), or the model this tokenizer belongs to`,
  );
}

/** Tokens matched as a whole in text before BPE, and those that decode to nothing. */
export interface SpecialTokens {
  /** Ids whose piece is split out of the text (a GGUF's control, user-defined and unknown tokens). */
  matched: readonly number[];
  /** Ids that decode to no bytes (control tokens: never shown as text). */
  silent: readonly number[];
}

export class Tokenizer {
  readonly vocabSize: number;
  readonly maxTokenLength: number;
  /** The raw bytes of each piece. */
  readonly pieces: Uint8Array[];
  readonly scores: Float32Array;
  /** piece (binary string) → id; the first id wins if a piece repeats. */
  private readonly lookup: Map<string, number>;
  private readonly keys: string[];
  /** For `<0xXX>` pieces, the byte they stand for; -1 otherwise. */
  private readonly byteValue: Int16Array;
  /** Special ids to split out of text, longest piece first (llama.cpp's order). */
  private readonly matched: number[];
  private readonly silent: ReadonlySet<number>;

  constructor(pieces: Uint8Array[], scores: Float32Array, maxTokenLength: number, special: SpecialTokens = { matched: [], silent: [] }) {
    this.vocabSize = pieces.length;
    this.maxTokenLength = maxTokenLength;
    this.pieces = pieces;
    this.scores = scores;
    this.keys = pieces.map(binaryKey);
    this.lookup = new Map();
    this.keys.forEach((k, id) => { if (!this.lookup.has(k)) this.lookup.set(k, id); });
    this.byteValue = new Int16Array(pieces.length).fill(-1);
    this.keys.forEach((k, id) => {
      const m = BYTE_PIECE.exec(k);
      if (m) this.byteValue[id] = parseInt(m[1]!, 16);
    });
    this.matched = special.matched.filter((id) => pieces[id]!.byteLength > 0).sort((a, b) => pieces[b]!.byteLength - pieces[a]!.byteLength || a - b);
    this.silent = new Set(special.silent);
  }

  /**
   * Parses `tokenizer.bin` for a model with `vocabSize` tokens. The file holds no count, so a
   * tokenizer for another vocabulary shows as missing entries or as bytes left over; both are
   * reported with the entry count the file really holds. Nothing is allocated for `vocabSize`
   * before the file is known to hold that many entries.
   */
  static parse(data: ArrayBuffer | Uint8Array, vocabSize: number): Tokenizer {
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (!Number.isSafeInteger(vocabSize) || vocabSize <= 0) {
      throw new TokenizerFormatError(`vocab size must be a positive integer, got ${vocabSize}`, 'Pass the model config\'s vocabSize');
    }
    if (bytes.byteLength < 4) {
      throw new TokenizerFormatError(`tokenizer file is ${bytes.byteLength} bytes; expected at least 4 (max_token_length)`);
    }
    const maxTokenLength = view.getInt32(0, true);
    if (maxTokenLength <= 0) throw new TokenizerFormatError(`tokenizer max_token_length must be > 0, got ${maxTokenLength}`);

    // One pass over the entries: where each piece starts, until the file or the vocab runs out.
    const starts: number[] = [];
    let off = 4;
    while (starts.length < vocabSize && off + 8 <= bytes.byteLength) {
      const i = starts.length;
      const len = view.getInt32(off + 4, true);
      if (len < 0) throw new TokenizerFormatError(`tokenizer entry ${i} has a negative length ${len} at byte ${off + 4}`);
      if (off + 8 + len > bytes.byteLength) {
        throw new TokenizerFormatError(`tokenizer entry ${i} needs ${len} bytes at byte ${off + 8}, but the file ends at byte ${bytes.byteLength}`);
      }
      starts.push(off);
      off += 8 + len;
    }
    if (starts.length < vocabSize) {
      const cut = off === bytes.byteLength ? '' : ` and ${bytes.byteLength - off} stray bytes`;
      throw vocabMismatch(`${starts.length} entries${cut}`, vocabSize);
    }
    if (off !== bytes.byteLength) {
      // Count the surplus entries when they parse, so the message says how big the vocab really is.
      let extra = 0;
      let o = off;
      while (o + 8 <= bytes.byteLength) {
        const len = view.getInt32(o + 4, true);
        if (len < 0 || o + 8 + len > bytes.byteLength) break;
        o += 8 + len;
        extra++;
      }
      throw vocabMismatch(o === bytes.byteLength ? `${vocabSize + extra} entries` : `more than ${vocabSize} entries (${bytes.byteLength - off} bytes left over)`, vocabSize);
    }
    const scores = new Float32Array(vocabSize);
    const pieces = starts.map((s, i) => {
      scores[i] = view.getFloat32(s, true);
      return bytes.slice(s + 8, s + 8 + view.getInt32(s + 4, true));
    });
    return new Tokenizer(pieces, scores, maxTokenLength);
  }

  /** The id of an exact piece, or -1 (run.c's `str_lookup`). */
  pieceId(piece: string | Uint8Array): number {
    const key = typeof piece === 'string' ? binaryKey(new TextEncoder().encode(piece)) : binaryKey(piece);
    return this.lookup.get(key) ?? -1;
  }

  /**
   * run.c's `encode`: optional BOS, a dummy-prefix " " when the text is non-empty, one token per
   * UTF-8 code point (or its bytes + 3 when the code point is not a piece), then greedy merges of
   * the adjacent pair whose merged piece has the highest score (the leftmost on ties). Special
   * tokens' text is split out first; each stretch between them is encoded so.
   */
  encode(text: string, bos = true, eos = false): number[] {
    let bytes = new TextEncoder().encode(text);
    // run.c sees a C string: it ends at the first NUL.
    const nul = bytes.indexOf(0);
    if (nul >= 0) bytes = bytes.subarray(0, nul);
    const tokens: number[] = [];
    if (bos) tokens.push(BOS);
    for (const part of this.partition(bytes)) {
      if (typeof part === 'number') tokens.push(part);
      else tokens.push(...this.encodeText(part));
    }
    if (eos) tokens.push(EOS);
    return tokens;
  }

  /**
   * The text split at special tokens' pieces, as llama.cpp's `tokenizer_st_partition`: each
   * special token in turn, longest first, is cut out of every stretch still text.
   */
  private partition(bytes: Uint8Array): (Uint8Array | number)[] {
    let parts: (string | number)[] = bytes.length > 0 ? [binaryKey(bytes)] : [];
    for (const id of this.matched) {
      const key = this.keys[id]!;
      parts = parts.flatMap((p) => {
        if (typeof p === 'number' || !p.includes(key)) return [p];
        return p.split(key).flatMap((t, i) => [...(i > 0 ? [id] : []), ...(t ? [t] : [])]);
      });
    }
    return parts.map((p) => (typeof p === 'number' ? p : Uint8Array.from(p, (c) => c.charCodeAt(0))));
  }

  /** run.c's encode of non-empty text without BOS/EOS: the dummy prefix, code points, merges. */
  private encodeText(bytes: Uint8Array): number[] {
    const tokens: number[] = [];
    if (bytes.length > 0) {
      // run.c would push -1 if " " is missing; fall back to its byte token instead.
      const space = this.lookup.get(' ');
      tokens.push(space ?? 0x20 + BYTE_TOKEN_OFFSET);
    }

    let start = 0;
    for (let i = 0; i < bytes.length; i++) {
      if ((bytes[i]! & 0xc0) !== 0x80) start = i;
      const len = i - start + 1;
      const next = i + 1 < bytes.length ? bytes[i + 1]! : 0;
      // keep reading continuation bytes, at most 4 bytes per code point (as run.c)
      if ((next & 0xc0) === 0x80 && len < 4) continue;
      const cp = bytes.subarray(start, i + 1);
      const id = this.lookup.get(binaryKey(cp));
      if (id !== undefined) tokens.push(id);
      else for (const b of cp) tokens.push(b + BYTE_TOKEN_OFFSET);
      // a stray continuation byte after a full sequence starts a fresh one-byte buffer
      start = i + 1;
    }

    // Merge until no adjacent pair is a piece. Same scan as run.c (best score, leftmost on ties;
    // run.c's threshold is the float -1e10), but each pair's merge is looked up once and only
    // the two pairs touching a merge are looked up again.
    const pairId = (i: number): number => this.lookup.get(this.keys[tokens[i]!]! + this.keys[tokens[i + 1]!]!) ?? -1;
    const merges: number[] = [];
    for (let i = 0; i < tokens.length - 1; i++) merges.push(pairId(i));
    const floor = Math.fround(-1e10);
    for (;;) {
      let bestScore = floor;
      let bestIdx = -1;
      for (let i = 0; i < merges.length; i++) {
        const id = merges[i]!;
        if (id !== -1 && this.scores[id]! > bestScore) {
          bestScore = this.scores[id]!;
          bestIdx = i;
        }
      }
      if (bestIdx === -1) break;
      tokens.splice(bestIdx, 2, merges[bestIdx]!);
      merges.splice(bestIdx, 1);
      if (bestIdx > 0) merges[bestIdx - 1] = pairId(bestIdx - 1);
      if (bestIdx < merges.length) merges[bestIdx] = pairId(bestIdx);
    }
    return tokens;
  }

  /**
   * run.c's `decode`: the bytes of `token`, without the leading space right after BOS, and with
   * `<0xXX>` pieces turned into their raw byte.
   */
  decode(prev: number, token: number): Uint8Array {
    if (!Number.isInteger(token) || token < 0 || token >= this.vocabSize) {
      throw new RangeError(`token ${token} is outside the vocabulary [0, ${this.vocabSize})`);
    }
    const b = this.byteValue[token]!;
    if (b >= 0) return Uint8Array.of(b);
    if (this.silent.has(token)) return new Uint8Array(0);
    const piece = this.pieces[token]!;
    return prev === BOS && piece[0] === 0x20 ? piece.subarray(1) : piece;
  }

  /** Text of a token sequence as run.c prints it when `tokens[0]` is the token before them. */
  decodeText(tokens: ArrayLike<number>, prev = BOS): string {
    const stream = new Utf8Stream();
    let out = '';
    for (let i = 0; i < tokens.length; i++) {
      out += stream.push(this.decode(prev, tokens[i]!));
      prev = tokens[i]!;
    }
    return out + stream.flush();
  }
}

/**
 * Turns a stream of byte chunks into text, holding back a code point split across chunks
 * (byte-fallback tokens emit one byte at a time).
 */
export class Utf8Stream {
  private readonly decoder = new TextDecoder('utf-8');

  push(bytes: Uint8Array): string {
    return this.decoder.decode(bytes, { stream: true });
  }

  /** Whatever is held back, with U+FFFD for an incomplete sequence. */
  flush(): string {
    return this.decoder.decode();
  }
}
