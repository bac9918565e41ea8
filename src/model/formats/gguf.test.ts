import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { rejectionOf } from '../../../test-support/rejection.js';
import fc from 'fast-check';
import { GGUFValueType } from '@huggingface/gguf';
import { ModelFormatError, PlanError, TokenizerFormatError } from '../../errors.js';
import type { ByteSource } from '../../loader/source.js';
import { collectBytes } from '../../../test-support/model/shard-bytes.js';
import { ggufStream } from '../../loader/gguf-stream.js';
import { makePlan } from '../../parallel/plan.js';
import { modelsDir, readArrayBuffer } from '../../../test-support/fixtures/paths.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';
import { ggufTokenizer } from '../tokenizer/gguf-tokenizer.js';
import { dequantize, quantize } from './gguf-blocks.js';
import { ggufName, isGguf, layoutGguf, loadGgufDequantized, readGguf, readGgufHeader, type HeadSource } from './gguf.js';
import { encodeGguf, ggufBpeKv, ggufHeader, ggufMetadata, ggufTensorPlan, referenceTensor, type GgufKv, type GgufQuant, type GgufTensorOut } from './gguf-write.js';
import { loadLlama2c } from './llama2c.js';
import { argmax, generate, ropeTables, type ReferenceModel } from '../reference.js';
import type { Llama3RopeScaling } from '../config.js';
import { randomWeights, TINY_QWEN2 } from '../../../test-support/model/hf-testing.js';
import { bpeFixture } from '../../../test-support/model/gguf-bpe-fixture.js';
import { detectFormat, parseModelHeader } from './detect.js';

const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
const files = new Map<GgufQuant, Uint8Array>();
const fileOf = (q: GgufQuant): Uint8Array => {
  if (!files.has(q)) files.set(q, encodeGguf(stories, q, tok));
  return files.get(q)!;
};

function headSource(bytes: Uint8Array, name = 'test.gguf'): HeadSource {
  return { name, size: async () => bytes.byteLength, head: async (n) => bytes.subarray(0, n) };
}

/** A source that hands out its bytes in small odd chunks, so blocks straddle chunk edges. */
function chunked(bytes: Uint8Array, chunk = 777): ByteSource {
  return {
    ...headSource(bytes),
    identity: async () => 'test',
    async *chunks() {
      for (let o = 0; o < bytes.byteLength; o += chunk) yield bytes.slice(o, o + chunk);
    },
  };
}

describe('GGUF reader', () => {
  it('reads stories260K written as F32: the llama2.c config, llama.cpp names, exact weights', async () => {
    const bytes = fileOf('f32');
    expect(isGguf(bytes)).toBe(true);
    expect(detectFormat(bytes.subarray(0, 256))).toBe('gguf');
    expect(() => parseModelHeader(bytes.subarray(0, 256), bytes.byteLength)).toThrow(ModelFormatError);
    const { layout, model } = await loadGgufDequantized(bytes);
    expect(layout.config).toEqual({ ...stories.config, normEps: Math.fround(1e-5) });
    expect(layout.tensors.find((t) => t.name === 'output')).toMatchObject({ aliasOf: 'tok_embeddings' });
    expect(layout.tensors.every((t) => t.dtype === 'f32')).toBe(true);
    for (const k of ['tokenEmbeddingTable', 'wq', 'wk', 'wo', 'w1', 'w2', 'w3', 'rmsAttWeight', 'rmsFinalWeight'] as const) {
      expect(model.weights[k]).toEqual(stories.weights[k]);
    }
  });

  it('streams F16 matrices as their halves and Q8_0 / Q4_0 matrices as values plane then f32 scales, across odd chunk edges', async () => {
    for (const q of ['f16', 'q8_0', 'q4_0'] as const) {
      const bytes = fileOf(q);
      const { layout, model } = await loadGgufDequantized(bytes);
      const stream = await collectBytes(ggufStream(chunked(bytes), layout));
      expect(stream.byteLength).toBe(layout.streamBytes);
      const want = new Map<string, Float32Array>([
        ['tok_embeddings', model.weights.tokenEmbeddingTable], ['layers.2.attention.wk', model.weights.wk.subarray(2 * 32 * 64, 3 * 32 * 64)],
        ['layers.4.feed_forward.w2', model.weights.w2.subarray(4 * 64 * 172)], ['norm', model.weights.rmsFinalWeight],
      ]);
      for (const [name, values] of want) {
        const t = layout.tensors.find((x) => x.name === name)!;
        const n = t.shape[0] * t.shape[1];
        const got = new Float32Array(n);
        if (t.dtype === 'f32') got.set(new Float32Array(stream.slice(t.offset, t.offset + n * 4).buffer));
        else if (t.dtype === 'f16') dequantize('F16', stream.slice(t.offset, t.offset + n * 2), got);
        else {
          const s = new Float32Array(stream.slice(t.quant!.scaleOffset, t.quant!.scaleOffset + (n / 32) * 4).buffer);
          for (let i = 0; i < n; i++) {
            const v = t.dtype === 'q8_0' ? new Int8Array(stream.buffer, t.offset, n)[i]! : (() => {
              const g = Math.floor(i / 32), k = i % 32;
              const byte = stream[t.offset + g * 16 + (k % 16)]!;
              return (k < 16 ? byte & 15 : byte >> 4) - 8;
            })();
            got[i] = Math.fround(v * s[Math.floor(i / 32)]!);
          }
        }
        expect(got, `${q} ${name}`).toEqual(values);
      }
      // w2's rows of 172 do not split into blocks of 32: llama-quantize's F16 fallback, kept f16;
      // the norms are vectors, f32 whatever the file holds
      const dtypes = Object.fromEntries(layout.tensors.map((t) => [t.name, t.dtype]));
      expect(dtypes).toMatchObject({ tok_embeddings: q, 'layers.0.attention.wq': q, 'layers.0.feed_forward.w2': 'f16', 'layers.0.ffn_norm': 'f32', norm: 'f32' });
      const w2 = layout.tensors.find((t) => t.name === 'layers.0.feed_forward.w2')!;
      expect(w2).toMatchObject({ shape: [64, 172], byteLength: 64 * 172 * 2 });
      expect(w2.quant).toBeUndefined();
    }
  });

  it('the oracle on an F32 GGUF\'s weights gives run.c\'s greedy tokens; on Q8_0\'s dequantised weights it runs the same loop', async () => {
    const greedy = JSON.parse(readFileSync(new URL('../../../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[] };
    const { model } = await loadGgufDequantized(fileOf('f32'));
    expect(generate(model, [1], 60, (l) => argmax(l, 512))).toEqual(greedy.tokens.slice(0, 61));
    const q8 = await loadGgufDequantized(fileOf('q8_0'));
    const tokens = generate(q8.model, [1], 60, (l) => argmax(l, 512));
    expect(tokens.length).toBe(61);
    // quantised weights: the story starts as the f32 model's does
    expect(tokens.slice(0, 6)).toEqual(greedy.tokens.slice(0, 6));
  });

  it('Q4_0 layout: nibble plane of rows·cols/2 bytes, scales after it; the plan slices it in whole groups', async () => {
    const { layout } = await loadGgufDequantized(fileOf('q4_0'));
    const wq = layout.tensors.find((t) => t.name === 'layers.0.attention.wq')!;
    expect(wq).toMatchObject({ dtype: 'q4_0', shape: [64, 64], byteLength: 64 * 32, quant: { groupSize: 32, scaleOffset: wq.offset + 64 * 32 } });
    const plan = makePlan(layout.config, { tensorParallel: 2 }, layout.tensors);
    const wo = plan.ranks[1]!.slices.find((s) => s.name === 'layers.0.attention.wo')!;
    // rank 1 owns columns 32..63 of each of 64 rows: 16 nibble bytes per row, then one scale per row
    expect(wo).toMatchObject({ dtype: 'q4_0', groupSize: 32, shape: [64, 32], byteLength: 64 * 16 + 64 * 4 });
    const t = layout.tensors.find((x) => x.name === 'layers.0.attention.wo')!;
    expect(wo.ranges[0]).toEqual({ fileOffset: t.offset + 16, length: 16, dstOffset: 0 });
    expect(wo.ranges.at(-1)).toEqual({ fileOffset: t.quant!.scaleOffset + 63 * 2 * 4 + 4, length: 4, dstOffset: 64 * 16 + 63 * 4 });
  });

  it('the plan allows TP 1 and 2 for Q8_0 (head size 8, groups of 32) and refuses TP 4 with a PlanError', async () => {
    const { layout } = await loadGgufDequantized(fileOf('q8_0'));
    for (const tp of [1, 2]) expect(makePlan(layout.config, { tensorParallel: tp }, layout.tensors).world).toBe(tp);
    expect(() => makePlan(layout.config, { tensorParallel: 4 }, layout.tensors)).toThrow(PlanError);
    expect(() => makePlan(layout.config, { tensorParallel: 4 }, layout.tensors)).toThrow(/quantisation group of 32/);
  });

  it('reads the tokenizer from the metadata: the same pieces, scores and encodings as tok512.bin', async () => {
    const layout = await readGguf(headSource(fileOf('q8_0')));
    const t = ggufTokenizer(layout.metadata, 512);
    expect(t.vocabSize).toBe(512);
    expect(t.scores).toEqual(tok.scores);
    for (let i = 3; i < 512; i++) expect(Array.from(t.pieces[i]!)).toEqual(Array.from(tok.pieces[i]!));
    for (const text of ['Once upon a time, there was a little girl.', 'Lily said "hi!"\nTim ran 123 ünïcödé 🙂', '']) {
      expect(t.encode(text, true, false)).toEqual(tok.encode(text, true, false));
    }
    expect(t.decodeText([400, 300, 13, 500])).toBe(tok.decodeText([400, 300, 13, 500]));
  });
});

/** stories260K as F32 with `edit` applied to its metadata and `tensors` to its tensor infos (the data stays). */
function rewrite(edit: (kv: GgufKv) => void, tensors?: (t: GgufTensorOut[]) => void): Uint8Array {
  const kv = ggufMetadata(stories.config, 'f32', tok);
  edit(kv);
  return rebuild(kv, fileOf('f32'), tensors);
}

function rebuild(kv: GgufKv, good: Uint8Array, edit?: (t: GgufTensorOut[]) => void): Uint8Array {
  // The tensors of the good file, re-listed; data copied from it in order.
  const list: GgufTensorOut[] = [];
  const names = ['token_embd.weight'];
  for (let l = 0; l < 5; l++) for (const k of ['attn_norm', 'attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_norm', 'ffn_gate', 'ffn_up', 'ffn_down']) names.push(`blk.${l}.${k}.weight`);
  names.push('output_norm.weight');
  const dims: Record<string, number[]> = {
    token_embd: [64, 512], attn_norm: [64], attn_q: [64, 64], attn_k: [64, 32], attn_v: [64, 32], attn_output: [64, 64], ffn_norm: [64],
    ffn_gate: [64, 172], ffn_up: [64, 172], ffn_down: [172, 64], output_norm: [64],
  };
  for (const n of names) {
    const d = dims[n.replace(/^blk\.\d+\./, '').replace('.weight', '')]!;
    list.push({ name: n, dims: d, type: 'F32', byteLength: d.reduce((a, b) => a * b, 4) });
  }
  edit?.(list);
  const { header, offsets, fileSize } = ggufHeader(kv, list);
  const out = new Uint8Array(fileSize);
  out.set(header);
  offsets.forEach((o, i) => out.set(good.subarray(o, o + Math.min(list[i]!.byteLength, good.byteLength - o)), o));
  return out;
}

const layoutError = (bytes: Uint8Array): Promise<Error> => rejectionOf(readGguf(headSource(bytes)), 'the GGUF to be refused');

describe('GGUF reader refuses bad files with a ModelFormatError naming the problem', () => {
  it('rebuilding the good file from its parts reads back (the helper itself is sound)', async () => {
    const layout = await readGguf(headSource(rewrite(() => {})));
    expect(layout.config.nLayers).toBe(5);
  });

  it('truncated in the data and in the header', async () => {
    const good = fileOf('f32');
    const cut = await layoutError(good.subarray(0, good.byteLength - 100));
    expect(cut).toBeInstanceOf(ModelFormatError);
    expect(cut.message).toMatch(/output_norm\.weight" ends at byte \d+, the file has/);
    const head = await layoutError(good.subarray(0, 5000));
    expect(head).toBeInstanceOf(ModelFormatError);
  });

  it('not a GGUF, another architecture, a missing hyperparameter', async () => {
    expect(await layoutError(new Uint8Array(64))).toBeInstanceOf(ModelFormatError);
    const arch = await layoutError(rewrite((kv) => { kv['general.architecture'] = { value: 'gpt2', type: GGUFValueType.STRING }; }));
    expect(arch.message).toMatch(/architecture "gpt2" is not supported/);
    const eps = await layoutError(rewrite((kv) => { delete kv['llama.attention.layer_norm_rms_epsilon']; }));
    expect(eps.message).toMatch(/lacks llama\.attention\.layer_norm_rms_epsilon/);
    const heads = await layoutError(rewrite((kv) => { kv['llama.attention.head_count_kv'] = { value: 3, type: GGUFValueType.UINT32 }; }));
    expect(heads.message).toMatch(/head_count_kv 3 must divide head_count 8/);
  });

  it('an unsupported tensor type lists the supported ones', async () => {
    const e = await layoutError(rewrite(() => {}, (l) => { l[2]!.type = 11; }));
    expect(e).toBeInstanceOf(ModelFormatError);
    expect(e.message).toMatch(/"blk\.0\.attn_q\.weight" is Q3_K; webgpu-tp reads F32, F16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K tensors/);
  });

  it('bad dims, a missing tensor, an unknown tensor', async () => {
    const dims = await layoutError(rewrite(() => {}, (l) => { l[3]!.dims = [32, 64]; }));
    expect(dims.message).toMatch(/"blk\.0\.attn_k\.weight" has dims \[32, 64\], the metadata implies \[64, 32\]/);
    const missing = await layoutError(rewrite(() => {}, (l) => { l.splice(9, 1); }));
    expect(missing.message).toMatch(/lacks 1 tensor\(s\).*blk\.0\.ffn_down\.weight/);
    const unknown = await layoutError(rewrite(() => {}, (l) => { l[1]!.name = 'blk.0.attn_qkv.weight'; }));
    expect(unknown.message).toMatch(/"blk\.0\.attn_qkv\.weight" is not part of a Llama/);
  });

  it('a tokenizer that does not fit the model', async () => {
    const layout = layoutGguf(await readGgufHeader(headSource(fileOf('f32'))), fileOf('f32').byteLength, 'x');
    expect(() => ggufTokenizer(layout.metadata, 600)).toThrow(TokenizerFormatError);
    expect(() => ggufTokenizer({ ...layout.metadata, 'tokenizer.ggml.model': 'gpt2' }, 512)).toThrow(/"gpt2"/);
    expect(() => ggufTokenizer({ 'general.architecture': 'llama' }, 512)).toThrow(/carries no tokenizer/);
  });
});

describe('GGML block rules', () => {
  it('Q8_0: d = amax/127, q = roundf(x/d); dequantised within d/2', () => {
    const x = new Float32Array(64).map((_, i) => Math.sin(i * 1.3) * (i < 32 ? 2 : 0.01));
    const b = quantize('Q8_0', x);
    expect(b.byteLength).toBe(68);
    const y = new Float32Array(64);
    dequantize('Q8_0', b, y);
    for (let g = 0; g < 2; g++) {
      const amax = Math.max(...x.subarray(g * 32, g * 32 + 32).map(Math.abs));
      for (let i = g * 32; i < g * 32 + 32; i++) expect(Math.abs(y[i]! - x[i]!)).toBeLessThanOrEqual((amax / 127) * 0.5 + amax * 1e-3);
    }
    expect(new Int8Array(b.buffer, 2, 32)).toContain(127);
  });

  it('Q4_0: d = max/−8 with the sign of the largest magnitude; nibble k low, k+16 high', () => {
    const x = new Float32Array(64);
    x[5] = -4; // block 0: largest magnitude, negative: d = −4/−8 = 0.5, and −4 → trunc(−8 + 8.5) = 0
    x[20] = 3.5; // 7 + 8.5 → 15: the high nibble of byte 4
    x[0] = 0.26; // 0.52 + 8.5 → 9
    x[16] = -0.24; // −0.48 + 8.5 → 8
    x[32 + 3] = 4; // block 1: positive maximum: d = −0.5, and 4 → trunc(−8 + 8.5) = 0
    x[32 + 4] = -3.9; // 7.8 + 8.5 = 16.3 → min(15, 16) = 15
    const b = quantize('Q4_0', x);
    expect(b.byteLength).toBe(36);
    const view = new DataView(b.buffer);
    expect(view.getUint16(0, true)).toBe(0x3800); // f16(0.5)
    expect(view.getUint16(18, true)).toBe(0xb800); // f16(−0.5)
    const nib = (blk: number, k: number) => (k < 16 ? b[blk * 18 + 2 + k]! & 15 : b[blk * 18 + 2 + k - 16]! >> 4);
    expect([nib(0, 5), nib(0, 20), nib(0, 0), nib(0, 16), nib(0, 1), nib(1, 3), nib(1, 4)]).toEqual([0, 15, 9, 8, 8, 0, 15]);
    const y = new Float32Array(64);
    dequantize('Q4_0', b, y);
    expect([y[5], y[20], y[0], y[16], y[35], y[36]]).toEqual([-4, 3.5, 0.5, 0, 4, -3.5]);
  });

  it('F16 rounds to nearest even and widens back exactly', () => {
    const x = new Float32Array([1, -2.5, 65504, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 2 ** -24, 6e-8, 1e6]);
    const y = new Float32Array(x.length);
    dequantize('F16', quantize('F16', x), y);
    expect(Array.from(y)).toEqual([1, -2.5, 65504, 1, 1 + 2 ** -9, 2 ** -24, 2 ** -24, Infinity]);
  });
});

/** Llama 3's RoPE scaling as the per-frequency divisors convert_hf_to_gguf.py writes to rope_freqs. */
function llama3Factors(headSize: number, theta: number, s: Llama3RopeScaling): number[] {
  const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
  const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
  return Array.from({ length: headSize / 2 }, (_, i) => {
    const wavelen = (2 * Math.PI) / (1 / theta ** ((2 * i) / headSize));
    if (wavelen < highWavelen) return 1;
    if (wavelen > lowWavelen) return s.factor;
    const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
    return Math.fround(1 / ((1 - smooth) / s.factor + smooth));
  });
}

describe('GGUF architectures: qwen2 (q/k/v biases, rotate_half), llama with rope_freqs, the tied output', () => {
  const qwen = { config: TINY_QWEN2, weights: randomWeights(TINY_QWEN2, 3) };
  const qwenTok = bpeFixture(TINY_QWEN2.vocabSize, 'qwen2');
  const qwenKv = ggufBpeKv(qwenTok.gguf);
  const qwenFile = (q: GgufQuant) => encodeGguf(qwen, q, qwenKv);

  it('reads a Qwen2 GGUF: qwen2.* keys, F32 bias vectors split with their rows, rows kept in rotate_half order, no output.weight', async () => {
    const bytes = qwenFile('f32');
    const h = await readGgufHeader(headSource(bytes));
    expect(h.metadata['general.architecture']).toBe('qwen2');
    expect(h.tensors.find((t) => t.name === 'blk.1.attn_k.bias')).toMatchObject({ dims: [32], type: 0 });
    expect(h.tensors.some((t) => t.name === 'output.weight')).toBe(false);
    const { layout, model } = await loadGgufDequantized(bytes);
    expect(layout.config).toEqual({ ...TINY_QWEN2, normEps: Math.fround(1e-6) });
    expect(layout.tensors.find((t) => t.name === 'layers.1.attention.bq')).toMatchObject({ shape: [64, 1], dtype: 'f32', byteLength: 64 * 4 });
    expect(layout.tensors.find((t) => t.name === 'output')).toMatchObject({ aliasOf: 'tok_embeddings' });
    for (const k of ['tokenEmbeddingTable', 'wq', 'wk', 'bq', 'bk', 'bv', 'wo', 'w2', 'rmsFinalWeight'] as const) expect(model.weights[k], k).toEqual(qwen.weights[k]);
    // the oracle on the file's weights is the oracle on the model's
    expect(generate(model, [1, 2, 3], 12, (l) => argmax(l, 320))).toEqual(generate(qwen, [1, 2, 3], 12, (l) => argmax(l, 320)));
    const plan = makePlan(layout.config, { tensorParallel: 2 }, layout.tensors);
    expect(plan.ranks[1]!.slices.find((s) => s.name === 'layers.0.attention.bq')).toMatchObject({ shape: [32, 1] });
  });

  it('Q8_0 Qwen2: matrices stay q8_0, biases stay f32 vectors', async () => {
    const c = { ...TINY_QWEN2, dim: 64 }; // rows of 64 take blocks of 32
    const { layout } = await loadGgufDequantized(encodeGguf({ config: c, weights: randomWeights(c, 4) }, 'q8_0', qwenKv));
    const dtypes = Object.fromEntries(layout.tensors.map((t) => [t.name, t.dtype]));
    expect(dtypes).toMatchObject({ 'layers.0.attention.wq': 'q8_0', 'layers.0.attention.bq': 'f32', 'layers.0.attention.bv': 'f32', 'layers.0.attention_norm': 'f32' });
  });

  it('a Llama 3.1 GGUF\'s rope_freqs becomes config.ropeScaling (not a streamed tensor), and its tables are Llama 3\'s', async () => {
    const scaling: Llama3RopeScaling = { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 64 };
    const factors = llama3Factors(8, 10000, scaling);
    expect(new Set(factors).size).toBeGreaterThan(2); // kept, ramped and slowed frequencies all present
    const config = { ...stories.config, ropeScaling: { type: 'factors' as const, factors } };
    const bytes = encodeGguf({ config, weights: stories.weights }, 'q8_0', tok);
    const h = await readGgufHeader(headSource(bytes));
    expect(h.tensors[0]).toMatchObject({ name: 'rope_freqs.weight', dims: [4], type: 0 });
    for (const src of [headSource(bytes), { ...headSource(bytes), range: async (a: number, b: number) => bytes.subarray(a, b) }]) {
      const layout = await readGguf(src);
      expect(layout.config.ropeScaling).toEqual({ type: 'factors', factors });
      expect(layout.tensors.some((t) => t.name.includes('rope'))).toBe(false);
      expect(layout.segments).toHaveLength(layout.tensors.filter((t) => !t.aliasOf).length);
    }
    const fromFile = ropeTables(8, 512, 10000, config.ropeScaling);
    const hf = ropeTables(8, 512, 10000, scaling);
    for (const k of ['cos', 'sin'] as const) for (let i = 0; i < hf[k].length; i++) expect(Math.abs(fromFile[k][i]! - hf[k][i]!)).toBeLessThan(2e-5);
    expect(fromFile.cos).not.toEqual(ropeTables(8, 512, 10000).cos);
    const { model } = await loadGgufDequantized(bytes);
    expect(model.config.ropeScaling).toEqual(config.ropeScaling);
  });

  it('refuses a Qwen2 file labelled qwen3 (biases, no q/k norms), a malformed rope_freqs, rope_freqs outside llama, a Qwen2 without its biases', async () => {
    const q3 = rebuildArch(qwen, qwenKv, (kv) => {
      for (const k of Object.keys(kv).filter((k) => k.startsWith('qwen2.'))) {
        kv[k.replace('qwen2.', 'qwen3.')] = kv[k]!;
        delete kv[k];
      }
      kv['general.architecture'] = { value: 'qwen3', type: GGUFValueType.STRING };
    });
    expect((await layoutError(q3)).message).toMatch(/"blk\.0\.attn_q\.bias" is not part of a Qwen3 model/);
    const other = await layoutError(rewrite((kv) => { kv['general.architecture'] = { value: 'phi3', type: GGUFValueType.STRING }; }));
    expect(other.message).toMatch(/"phi3" is not supported; webgpu-tp runs "llama" and "qwen2"/);
    const freqs = (dims: number[], type: number) => rewrite(() => {}, (l) => l.unshift({ name: 'rope_freqs.weight', dims, type, byteLength: 16 }));
    expect((await layoutError(freqs([8], 0))).message).toMatch(/rope_freqs\.weight is F32 \[8\]; llama\.cpp writes F32 \[4\]/);
    expect((await layoutError(freqs([4], 1))).message).toMatch(/rope_freqs\.weight is F16 \[4\]/);
    const inQwen = rebuildArch(qwen, qwenKv, () => {}, (l) => l.unshift({ name: 'rope_freqs.weight', dims: [8], type: 0, byteLength: 32 }));
    expect((await layoutError(inQwen)).message).toMatch(/"rope_freqs\.weight" is not part of a Qwen2 model/);
    const noBias = rebuildArch(qwen, qwenKv, () => {}, (l) => l.splice(l.findIndex((t) => t.name === 'blk.0.attn_v.bias'), 1));
    expect((await layoutError(noBias)).message).toMatch(/lacks 1 tensor\(s\).*blk\.0\.attn_v\.bias/);
    const scaled = rebuildArch(qwen, qwenKv, (kv) => { kv['qwen2.rope.scaling.type'] = { value: 'yarn', type: GGUFValueType.STRING }; });
    expect((await layoutError(scaled)).message).toMatch(/RoPE scaling "yarn" in GGUF is not supported/);
  });

  it('fuzzed: a Llama (rope_freqs) or Qwen2 (biases) file with bytes changed or cut reads or fails with a ModelFormatError', async () => {
    const config = { ...stories.config, ropeScaling: { type: 'factors' as const, factors: [1, 2, 4, 8] } };
    const files = [qwenFile('f32'), encodeGguf({ config, weights: stories.weights }, 'f32', tok)];
    const mutation = fc.record({
      file: fc.constantFrom(0, 1),
      flips: fc.array(fc.record({ at: fc.nat({ max: 40_000 }), value: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 4 }),
      cut: fc.option(fc.nat({ max: 60_000 })),
    });
    await fc.assert(fc.asyncProperty(mutation, async ({ file, flips, cut }) => {
      const bytes = files[file]!.slice(0, cut ?? undefined);
      for (const f of flips) if (f.at < bytes.byteLength) bytes[f.at] = f.value;
      try {
        await readGguf(headSource(bytes));
      } catch (e) {
        expect(e).toBeInstanceOf(ModelFormatError);
      }
    }), { numRuns: 150, seed: 3 });
  });
});

/** `model` as an F32 GGUF with `edit` applied to the metadata and `tensors` to the tensor infos (added tensors hold zeros). */
function rebuildArch(model: ReferenceModel, tokenizer: GgufKv, edit: (kv: GgufKv) => void, tensors?: (t: GgufTensorOut[]) => void): Uint8Array {
  const kv = ggufMetadata(model.config, 'f32', tokenizer);
  edit(kv);
  const plan = ggufTensorPlan(model.config, 'f32');
  const list: GgufTensorOut[] = plan.map((t) => ({ name: ggufName(t.name), dims: t.shape[0] === 1 || t.shape[1] === 1 ? [t.shape[0] * t.shape[1]] : [t.shape[1], t.shape[0]], type: 'F32', byteLength: t.shape[0] * t.shape[1] * 4 }));
  const data = new Map(plan.map((t) => [ggufName(t.name), quantize('F32', referenceTensor(model, t.name))]));
  tensors?.(list);
  const { header, offsets, fileSize } = ggufHeader(kv, list);
  const out = new Uint8Array(fileSize);
  out.set(header);
  list.forEach((t, i) => out.set((data.get(t.name) ?? new Uint8Array(t.byteLength)).subarray(0, t.byteLength), offsets[i]));
  return out;
}
