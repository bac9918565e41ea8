/**
 * The byte-level BPE tokenizer a GGUF carries (`tokenizer.ggml.model` "gpt2": Llama 3, Qwen2,
 * SmolLM), rebuilt as the `tokenizer.json` it came from and run by `@huggingface/tokenizers`
 * through HfTokenizer, so it encodes, decodes and renders chat templates as the HF path does.
 *
 * What llama.cpp (llama-vocab.cpp) derives from the metadata is kept: the pre-tokenizer named
 * by `tokenizer.ggml.pre` (its regexes, each splitting the pieces of the one before), Llama 3's
 * `ignore_merges`, the add-BOS defaults and every end-of-generation id (EOS, EOT, EOM and the
 * tokens it recognises by their text). Control tokens are special added tokens (matched in
 * text, decoded to nothing); user-defined ones are added tokens decoded as their text.
 */
import type { MetadataValue } from '@huggingface/gguf';
import { TokenizerFormatError } from '../../errors.js';
import { HfTokenizer } from './hf-tokenizer.js';
import { TOKEN_TYPE } from './gguf-tokenizer.js';

type Meta = Readonly<Record<string, MetadataValue>>;
type Json = Record<string, unknown>;

const REMEDY = 'Pass tokenizer: the model\'s tokenizer.json';

/** GPT-2's regex (llama.cpp spells it without the final `|\s+`, which changes no split). */
const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
/** Llama 3's and Qwen2's regexes, as llama.cpp adapts them (no inline case flag); they differ in digits. */
const llama3Like = (digits: string) =>
  `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|${digits}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;

interface PreTokenizer {
  /** llama.cpp's regexes, applied in turn. */
  regexes: readonly string[];
  /** A word that is itself a token is not merged (Llama 3). */
  ignoreMerges: boolean;
  addBos: boolean;
  /** The Hugging Face tokenizer.json's normalizer (Qwen2's NFC). */
  nfc: boolean;
}

const QWEN2: PreTokenizer = { regexes: [llama3Like('\\p{N}')], ignoreMerges: false, addBos: false, nfc: true };

/** The `tokenizer.ggml.pre` values read, with what llama.cpp makes of each. */
const PRE: Readonly<Record<string, PreTokenizer>> = {
  'llama-bpe': { regexes: [llama3Like('\\p{N}{1,3}')], ignoreMerges: true, addBos: true, nfc: false },
  qwen2: QWEN2,
  smollm: { regexes: ['\\p{N}', GPT2], ignoreMerges: false, addBos: false, nfc: false },
  default: { regexes: ['[\\p{P}\\$\\+<=>\\^~\\|]+', GPT2, '\\p{N}+', '[0-9][0-9][0-9]'], ignoreMerges: false, addBos: false, nfc: false },
  // DeepSeek-R1's Qwen distills: llama.cpp gives this name qwen2's pre-tokenizer type and flags.
  'deepseek-r1-qwen': QWEN2,
};

/** The `tokenizer.ggml.pre` values read. */
const GGUF_BPE_PRE = Object.keys(PRE);

/** Token texts llama.cpp ends a generation on wherever they are in the vocabulary (of its FIM ones, Qwen's). */
const EOG_TEXTS = new Set([
  '<|eot_id|>', '<|im_end|>', '<|end|>', '<end_of_turn>', '<|endoftext|>', '<|eom_id|>', '<EOT>', '_<EOT>',
  '<|end_of_text|>', '<end_of_utterance>', '<|fim_pad|>', '<|repo_name|>', '<|file_sep|>',
]);

function strings(meta: Meta, key: string): string[] {
  const v = meta[key];
  if (!Array.isArray(v)) throw new TokenizerFormatError(`the GGUF metadata lacks ${key}`, REMEDY);
  return v.map((t, i) => {
    if (typeof t !== 'string') throw new TokenizerFormatError(`GGUF ${key}[${i}] is not a string`, REMEDY);
    return t;
  });
}

function tokenId(meta: Meta, key: string, n: number): number | undefined {
  const v = meta[key];
  if (v === undefined) return undefined;
  const id = Number(v);
  if (!Number.isInteger(id) || id < 0 || id >= n) throw new TokenizerFormatError(`the GGUF's ${key} is ${String(v)}, outside its ${n} tokens`, REMEDY);
  return id;
}

function flag(meta: Meta, key: string, fallback: boolean): boolean {
  const v = meta[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw new TokenizerFormatError(`the GGUF's ${key} must be a boolean, got ${String(v)}`, REMEDY);
  return v;
}

/** The pre-tokenizer settings of `tokenizer.ggml.pre` (absent: "default", as llama.cpp reads it). */
function preTokenizer(meta: Meta): PreTokenizer {
  const pre = meta['tokenizer.ggml.pre'] ?? 'default';
  const p = typeof pre === 'string' ? PRE[pre] : undefined;
  if (!p) {
    throw new TokenizerFormatError(
      `the GGUF's tokenizer.ggml.pre is ${JSON.stringify(pre)}; webgpu-tp reads ${GGUF_BPE_PRE.map((x) => `"${x}"`).join(', ')}`,
      'Pass tokenizer: the model\'s tokenizer.json, which states its own pre-tokenizer',
    );
  }
  return p;
}

/** What HfTokenizer is built from: the tokenizer.json and tokenizer_config.json the GGUF stands for, and its stop ids. */
export interface GgufBpeFiles {
  tokenizerJson: Json;
  tokenizerConfig: Json;
  /** Every end-of-generation id, EOS first. */
  stopIds: number[];
}

/** Rebuilds the tokenizer files of a "gpt2" GGUF of `vocabSize` embedding rows. */
export function ggufBpeFiles(meta: Meta, vocabSize: number): GgufBpeFiles {
  const pre = preTokenizer(meta);
  const tokens = strings(meta, 'tokenizer.ggml.tokens');
  if (tokens.length !== vocabSize) {
    throw new TokenizerFormatError(`the GGUF's tokenizer has ${tokens.length} tokens but token_embd has ${vocabSize} rows`, 'The file is inconsistent; convert the model again');
  }
  const rawTypes = meta['tokenizer.ggml.token_type'];
  const types = Array.isArray(rawTypes) ? rawTypes.map(Number) : tokens.map(() => TOKEN_TYPE.normal);
  if (types.length !== tokens.length) throw new TokenizerFormatError(`the GGUF's tokenizer has ${tokens.length} tokens but ${types.length} token types`, REMEDY);
  const merges = strings(meta, 'tokenizer.ggml.merges').map((m, i) => {
    const at = m.indexOf(' ', 1); // as llama.cpp splits: a pair's first part is never empty
    if (at < 0) throw new TokenizerFormatError(`GGUF merge ${i} "${m}" is not two tokens separated by a space`, REMEDY);
    return [m.slice(0, at), m.slice(at + 1)];
  });

  const n = tokens.length;
  const bos = tokenId(meta, 'tokenizer.ggml.bos_token_id', n);
  const eos = tokenId(meta, 'tokenizer.ggml.eos_token_id', n);
  // llama.cpp names an empty token [EMPTY_i]; BOS and EOS are control tokens whatever their type says.
  tokens.forEach((t, id) => (tokens[id] = t === '' ? `[EMPTY_${id}]` : t));
  const typeOf = (id: number) => (id === bos || id === eos ? TOKEN_TYPE.control : types[id]);

  const vocab: Record<string, number> = Object.create(null) as Record<string, number>;
  const added: Json[] = [];
  const seen = new Set<string>();
  tokens.forEach((t, id) => {
    const type = typeOf(id);
    if (type === TOKEN_TYPE.unused) return;
    if (seen.has(t)) throw new TokenizerFormatError(`GGUF token ${id} "${t}" is in the vocabulary twice`, 'The file is inconsistent; convert the model again');
    seen.add(t);
    if (type === TOKEN_TYPE.control || type === TOKEN_TYPE.userDefined || type === TOKEN_TYPE.unknown) {
      added.push({ id, content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: type !== TOKEN_TYPE.userDefined });
    } else {
      vocab[t] = id;
    }
  });

  const addBos = flag(meta, 'tokenizer.ggml.add_bos_token', pre.addBos);
  const addEos = flag(meta, 'tokenizer.ggml.add_eos_token', false);
  if (addBos && bos === undefined) throw new TokenizerFormatError('the GGUF asks for a BOS token (add_bos_token) but has no tokenizer.ggml.bos_token_id', REMEDY);
  if (addEos && eos === undefined) throw new TokenizerFormatError('the GGUF asks for an EOS token (add_eos_token) but has no tokenizer.ggml.eos_token_id', REMEDY);

  const stop = new Set<number>();
  for (const key of ['eos', 'eot', 'eom']) {
    const id = tokenId(meta, `tokenizer.ggml.${key}_token_id`, n);
    if (id !== undefined) stop.add(id);
  }
  tokens.forEach((t, id) => EOG_TEXTS.has(t) && stop.add(id));

  const special = (id: number) => ({ SpecialToken: { id: tokens[id], type_id: 0 } });
  const single = [...(addBos ? [special(bos!)] : []), { Sequence: { id: 'A', type_id: 0 } }, ...(addEos ? [special(eos!)] : [])];
  const tokenizerJson: Json = {
    version: '1.0',
    added_tokens: added,
    normalizer: pre.nfc ? { type: 'NFC' } : null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        ...pre.regexes.map((r) => ({ type: 'Split', pattern: { Regex: r }, behavior: 'Isolated', invert: false })),
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: { type: 'TemplateProcessing', single, pair: [...single, { Sequence: { id: 'B', type_id: 1 } }], special_tokens: {} },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: { type: 'BPE', vocab, merges, ignore_merges: pre.ignoreMerges, byte_fallback: false, unk_token: null, dropout: null, fuse_unk: false },
  };
  const template = meta['tokenizer.chat_template'];
  const tokenizerConfig: Json = {
    clean_up_tokenization_spaces: false,
    ...(bos !== undefined ? { bos_token: tokens[bos] } : {}),
    ...(eos !== undefined ? { eos_token: tokens[eos] } : {}),
    ...(typeof template === 'string' ? { chat_template: template } : {}),
  };
  const stopIds = eos !== undefined ? [eos, ...[...stop].filter((id) => id !== eos)] : [...stop];
  return { tokenizerJson, tokenizerConfig, stopIds };
}

/** The GGUF's byte-level BPE tokenizer, for a model with `vocabSize` embedding rows. */
export function ggufBpeTokenizer(meta: Meta, vocabSize: number): HfTokenizer {
  const f = ggufBpeFiles(meta, vocabSize);
  return new HfTokenizer(f.tokenizerJson, f.tokenizerConfig, f.stopIds);
}
