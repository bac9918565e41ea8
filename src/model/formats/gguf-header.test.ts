import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { rejectionOf } from '../../../test-support/rejection.js';
import { GGUFValueType, serializeGgufMetadata, type GGUFTypedMetadata } from '@huggingface/gguf';
import { ModelFormatError } from '../../errors.js';
import { modelsDir, readArrayBuffer } from '../../../test-support/fixtures/paths.js';
import { bpeFixture, LLAMA3_CHAT_TEMPLATE } from '../../../test-support/model/gguf-bpe-fixture.js';
import { libraryGgufHeader } from '../../../test-support/model/gguf-library-header.js';
import { nestedArraysGguf } from '../../../test-support/model/gguf-nested.js';
import { randomWeights, TINY_QWEN2, TINY_QWEN3 } from '../../../test-support/model/hf-testing.js';
import { KQUANT_CONFIG, q4kmMix } from '../../../test-support/model/kquant-gguf.js';
import { spmChatKv, TINYLLAMA_TEMPLATE } from '../../../test-support/model/spm-chat-fixture.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';
import { HEADER_CHUNK, MAX_HEADER_BYTES, readGgufHeader, type HeadSource } from './gguf-header.js';
import { encodeGguf, GGUF_QUANTS, ggufBpeKv, ggufHeader, ggufMetadata, ggufTensorOut, ggufTensorPlan, type GgufKv } from './gguf-write.js';
import { ggufName } from './gguf.js';
import { loadLlama2c } from './llama2c.js';

const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);

/** A source over `bytes` that logs every request: [start, end) for range, [0, n) for head. */
function logged(bytes: Uint8Array, ranges = true): HeadSource & { asked: [number, number][] } {
  const asked: [number, number][] = [];
  return {
    name: 'test.gguf',
    asked,
    size: async () => bytes.byteLength,
    head: async (n) => (asked.push([0, Math.min(n, bytes.byteLength)]), bytes.slice(0, n)),
    ...(ranges ? { range: async (a: number, b: number) => (asked.push([a, Math.min(b, bytes.byteLength)]), bytes.slice(a, b)) } : {}),
  };
}

/** The header-only file of `kv` (no tensors), padded as a file with data would be. */
function metadataFile(kv: GgufKv): Uint8Array {
  const { header } = ggufHeader(kv, []);
  const out = new Uint8Array(header.byteLength + 32);
  out.set(header);
  return out;
}

const readError = (bytes: Uint8Array): Promise<Error> => rejectionOf(readGgufHeader(logged(bytes)), 'the header to be refused');

describe('GGUF header reader against @huggingface/gguf', () => {
  const llama31 = { ...stories.config, ropeScaling: { type: 'factors' as const, factors: [1, 1, 4.45, 8] } };
  const bpe = ggufBpeKv({ ...bpeFixture(512).gguf, chatTemplate: LLAMA3_CHAT_TEMPLATE, addBos: true });
  // Every kind of file the tests write: each quantisation, each architecture, each tokenizer form.
  const files: [string, () => Uint8Array][] = [
    ...GGUF_QUANTS.map((q): [string, () => Uint8Array] => [`stories260K ${q}, SentencePiece`, () => encodeGguf(stories, q, tok)]),
    ['stories260K without a tokenizer', () => encodeGguf(stories, 'f32')],
    ['SentencePiece with added tokens and a chat template', () => encodeGguf(stories, 'q8_0', spmChatKv(tok, TINYLLAMA_TEMPLATE))],
    ['Llama 3.1-style: byte-level BPE, chat template, rope_freqs', () => encodeGguf({ config: llama31, weights: stories.weights }, 'f32', bpe)],
    ['Qwen2 (biases)', () => encodeGguf({ config: TINY_QWEN2, weights: randomWeights(TINY_QWEN2, 3) }, 'f16', ggufBpeKv(bpeFixture(TINY_QWEN2.vocabSize, 'qwen2').gguf))],
    ['Qwen3 (q/k norms)', () => encodeGguf({ config: TINY_QWEN3, weights: randomWeights(TINY_QWEN3, 7) }, 'q8_0', ggufBpeKv(bpeFixture(TINY_QWEN3.vocabSize, 'qwen2').gguf))],
    // the header of encodeTypedGguf(kquantModel(), q4kmMix, tok), its data left zero (the reader never reads it)
    ['a Q4_K_M-style mix (Q4_K, Q5_K, Q6_K, Q8_0, Q4_0)', () => {
      const plan = ggufTensorPlan(KQUANT_CONFIG, 'f32').map((t) => ggufTensorOut({ ...t, name: ggufName(t.name), type: t.shape[0] === 1 || t.shape[1] === 1 ? t.type : q4kmMix(t.name) }));
      const { header, fileSize } = ggufHeader(ggufMetadata(KQUANT_CONFIG, 'q4_k_m', tok), plan);
      const out = new Uint8Array(fileSize);
      out.set(header);
      return out;
    }],
  ];
  for (const [what, file] of files) {
    it(`reads ${what} as the library does`, async () => {
      const bytes = file();
      const ours = await readGgufHeader(logged(bytes));
      expect(ours).toEqual(await libraryGgufHeader(bytes));
      expect(ours.tensors.length).toBeGreaterThan(0);
    });
  }

  it('every value type, GGUF versions 1–3 and both byte orders', async () => {
    const kv = {
      'a.u8': { value: 200, type: GGUFValueType.UINT8 }, 'a.i8': { value: -100, type: GGUFValueType.INT8 },
      'a.u16': { value: 60000, type: GGUFValueType.UINT16 }, 'a.i16': { value: -30000, type: GGUFValueType.INT16 },
      'a.u32': { value: 4e9, type: GGUFValueType.UINT32 }, 'a.i32': { value: -2e9, type: GGUFValueType.INT32 },
      'a.f32': { value: Math.fround(0.1), type: GGUFValueType.FLOAT32 }, 'a.bool': { value: true, type: GGUFValueType.BOOL },
      'a.str': { value: 'héllo 🦙', type: GGUFValueType.STRING },
      'a.u64': { value: 2n ** 63n + 5n, type: GGUFValueType.UINT64 }, 'a.i64': { value: -(2n ** 62n), type: GGUFValueType.INT64 },
      'a.f64': { value: Math.PI, type: GGUFValueType.FLOAT64 },
      'a.bools': { value: [true, false, true], type: GGUFValueType.ARRAY, subType: GGUFValueType.BOOL },
      'a.u64s': { value: [1n, 2n ** 40n], type: GGUFValueType.ARRAY, subType: GGUFValueType.UINT64 },
      'a.empty': { value: [], type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING },
      'general.alignment': { value: 64, type: GGUFValueType.UINT32 },
    };
    for (const version of [1, 2, 3] as const) {
      for (const littleEndian of [true, false]) {
        const typed = { version: { value: version, type: GGUFValueType.UINT32 }, tensor_count: { value: 0n, type: GGUFValueType.UINT64 }, kv_count: { value: 0n, type: GGUFValueType.UINT64 }, ...kv };
        const bytes = serializeGgufMetadata(typed as unknown as GGUFTypedMetadata, { littleEndian, alignment: 64 });
        const ours = await readGgufHeader(logged(bytes));
        expect(ours, `v${version} ${littleEndian ? 'LE' : 'BE'}`).toEqual(await libraryGgufHeader(bytes));
        expect(ours.metadata['a.u64']).toBe(2n ** 63n + 5n);
        expect(ours.dataOffset % 64).toBe(0);
      }
    }
  });
});

describe('GGUF header reader', () => {
  it('reads an array of arrays as the library does (written by hand: the library\'s writer cannot nest them)', async () => {
    const bytes = nestedArraysGguf();
    const ours = await readGgufHeader(logged(bytes));
    expect(ours.metadata['a.nested']).toEqual([['x', 'yz'], [], ['🙂']]);
    expect(ours.metadata['a.deep']).toEqual([[[1, 2]]]);
    expect(ours).toEqual(await libraryGgufHeader(bytes));
  });

  // ~5.3 MB of metadata: three HEADER_CHUNKs, the arrays crossing their edges.
  const big = metadataFile({
    'general.architecture': { value: 'llama', type: GGUFValueType.STRING },
    'tokenizer.ggml.tokens': { value: Array.from({ length: 200_000 }, (_, i) => `Ġtok${i}`), type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING },
    'tokenizer.ggml.scores': { value: Array.from({ length: 200_000 }, (_, i) => -i), type: GGUFValueType.ARRAY, subType: GGUFValueType.FLOAT32 },
    'tokenizer.ggml.merges': { value: Array.from({ length: 100_000 }, (_, i) => `Ġ t${i}`), type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING },
  });

  it('asks its source for each byte of the header once, in disjoint ranges, reading at most one chunk past it', async () => {
    expect(big.byteLength).toBeGreaterThan(2 * HEADER_CHUNK);
    const src = logged(big);
    const h = await readGgufHeader(src);
    expect((h.metadata['tokenizer.ggml.tokens'] as string[])[199_999]).toBe('Ġtok199999');
    expect((h.metadata['tokenizer.ggml.merges'] as string[])[99_999]).toBe('Ġ t99999');
    const sorted = [...src.asked].sort((a, b) => a[0] - b[0]);
    expect(sorted[0]![0]).toBe(0);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]![0], 'ranges overlap').toBeGreaterThanOrEqual(sorted[i - 1]![1]);
    const bytes = src.asked.reduce((n, [a, b]) => n + b - a, 0);
    expect(bytes).toBeGreaterThanOrEqual(h.dataOffset);
    expect(bytes).toBeLessThanOrEqual(h.dataOffset + HEADER_CHUNK);
    expect(src.asked.length).toBe(Math.ceil(big.byteLength / HEADER_CHUNK));
  });

  it('a source without range() is read through prefixes, to the same header', async () => {
    const src = logged(big, false);
    expect(await readGgufHeader(src)).toEqual(await readGgufHeader(logged(big)));
    expect(src.asked.every(([a]) => a === 0)).toBe(true);
  });

  it('keeps strings as their bytes are: a leading BOM, ill-formed UTF-8 as U+FFFD (TextDecoder)', async () => {
    const tokens = ['\uFEFFa', 'x', 'ß', '€', '🦙', 'long '.repeat(40)];
    const bytes = metadataFile({ 'tokenizer.ggml.tokens': { value: tokens, type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING } });
    expect((await readGgufHeader(logged(bytes))).metadata['tokenizer.ggml.tokens']).toEqual(tokens);
    // "x" (length 1) becomes the lone byte 0xff
    const at = bytes.findIndex((b, i) => b === 0x78 && bytes[i - 8] === 1 && bytes[i - 7] === 0);
    bytes[at] = 0xff;
    expect((await readGgufHeader(logged(bytes))).metadata['tokenizer.ggml.tokens']).toEqual(['\uFEFFa', '\uFFFD', 'ß', '€', '🦙', 'long '.repeat(40)]);
  });

  it('refuses a truncated header, counts the file cannot hold, a key stored twice, a bad alignment, with a ModelFormatError', async () => {
    const cut = await readError(big.subarray(0, 3_000_000));
    expect(cut).toBeInstanceOf(ModelFormatError);
    expect(cut.message).toMatch(/of the 3000000-byte file/);
    expect(await readError(new Uint8Array(64))).toBeInstanceOf(ModelFormatError);
    expect((await readError(new Uint8Array(2))).message).toMatch(/not a GGUF file/);

    // the token array's count (the 8 bytes after its element type) raised past what the file holds: refused before anything is allocated
    const key = new TextEncoder().encode('tokenizer.ggml.tokens');
    const k = big.findIndex((_, i) => key.every((b, j) => big[i + j] === b));
    for (const [count, said] of [[2n ** 31n, '2147483648'], [2n ** 40n, 'more than 2\\^32']] as const) {
      const huge = big.slice();
      new DataView(huge.buffer).setBigUint64(k + key.length + 8, count, true);
      const e = await readError(huge);
      expect(e).toBeInstanceOf(ModelFormatError);
      expect(e.message).toMatch(new RegExp(`declares ${said} array elements, more than the \\d+ bytes left of the ${big.byteLength}-byte file hold`));
    }

    const twice = metadataFile({ 'a.x': { value: 1, type: GGUFValueType.UINT32 }, 'a.y': { value: 2, type: GGUFValueType.UINT32 } });
    twice[twice.findIndex((b, i) => b === 0x79 && twice[i - 1] === 0x2e)] = 0x78; // "a.y" → "a.x"
    expect((await readError(twice)).message).toMatch(/key a\.x is stored twice/);

    const align = metadataFile({ 'general.alignment': { value: 48, type: GGUFValueType.UINT32 } });
    expect((await readError(align)).message).toMatch(/alignment must be a power of two, got 48/);
  });

  it('a damaged count or length in a multi-GB file is refused at 64 MiB of header, not read or allocated in proportion to the file', async () => {
    const base = metadataFile({ 'a.shorts': { value: [1, 2, 3], type: GGUFValueType.ARRAY, subType: GGUFValueType.UINT16 }, 'a.text': { value: 'abc', type: GGUFValueType.STRING } });
    const after = (key: string) => base.findIndex((_, i) => [...new TextEncoder().encode(key)].every((b, j) => base[i + j] === b)) + key.length;
    // 8 GiB: the header's bytes, then zeros; asking for more than MAX_HEADER_BYTES and a chunk of it is a plain Error, which fails the test
    const eightGiB = (bytes: Uint8Array): HeadSource => ({
      name: 'big.gguf',
      size: async () => 8 * 2 ** 30,
      head: async () => { throw new Error('expected range()'); },
      range: async (a, b) => {
        if (b > MAX_HEADER_BYTES + HEADER_CHUNK) throw new Error(`asked for bytes ${a}–${b}`);
        const out = new Uint8Array(b - a);
        out.set(bytes.subarray(a, b));
        return out;
      },
    });
    const patched = (at: number, value: bigint) => {
      const b = base.slice();
      new DataView(b.buffer).setBigUint64(at, value, true);
      return b;
    };
    for (const [what, bytes] of [
      ['2^31 uint16 array elements', patched(after('a.shorts') + 8, 2n ** 31n)],
      ['a 2^30-byte string', patched(after('a.text') + 4, 2n ** 30n)],
      ['2^28 tensors (their infos zeros)', patched(8, 2n ** 28n)],
    ] as const) {
      const e = await readGgufHeader(eightGiB(bytes)).then(() => new Error('read'), (x: unknown) => x as Error);
      expect(e, what).toBeInstanceOf(ModelFormatError);
      expect(e.message, what).toMatch(/runs past 64 MiB, the most webgpu-tp reads/);
    }
    expect(await readGgufHeader(eightGiB(base))).toEqual(await readGgufHeader(logged(base)));
  });
});
