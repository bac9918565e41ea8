import { describe, expect, it } from 'vitest';
import { rejectionOf } from '../../../test-support/rejection.js';
import fc from 'fast-check';
import { ModelFormatError } from '../../errors.js';
import { makePlan } from '../../parallel/plan.js';
import { mapFiles, openHfModel, readBytes } from '../../loader/hf-model.js';
import { exportHf } from '../../../test-support/model/hf-export.js';
import { randomWeights, stackWeights, TINY_QWEN3 } from '../../../test-support/model/hf-testing.js';
import { bpeFixture } from '../../../test-support/model/gguf-bpe-fixture.js';
import * as R from '../reference.js';
import { loadGgufDequantized, readGguf, readGgufHeader, type HeadSource } from './gguf.js';
import { encodeGguf, ggufBpeKv, ggufHeader, ggufMetadata, ggufTensorPlan, referenceTensor, type GgufKv, type GgufTensorOut } from './gguf-write.js';
import { quantize } from './gguf-blocks.js';
import { ggufName } from './gguf.js';
import { parseHfConfig } from './hf-config.js';

/** Qwen3: per-head q/k RMSNorm before RoPE, in GGUF (`qwen3`) and Hugging Face (Qwen3ForCausalLM) form. */
const qwen3 = { config: TINY_QWEN3, weights: randomWeights(TINY_QWEN3, 7, 3) };
const kv = ggufBpeKv(bpeFixture(TINY_QWEN3.vocabSize, 'qwen2').gguf);
const source = (bytes: Uint8Array): HeadSource => ({ name: 'qwen3.gguf', size: async () => bytes.byteLength, head: async (n) => bytes.subarray(0, n) });
const greedy = (m: R.ReferenceModel) => R.generate(m, [5, 17, 42], 16, (l) => R.argmax(l, m.config.vocabSize));

/** The model as an F32 GGUF with `edit` applied to its metadata and tensor list (added tensors hold zeros). */
function edited(editKv: (kv: GgufKv) => void, editTensors: (t: GgufTensorOut[]) => void = () => {}): Uint8Array {
  const meta = ggufMetadata(TINY_QWEN3, 'f32', kv);
  editKv(meta);
  const plan = ggufTensorPlan(TINY_QWEN3, 'f32');
  const list: GgufTensorOut[] = plan.map((t) => ({ name: ggufName(t.name), dims: t.shape[0] === 1 ? [t.shape[1]] : [t.shape[1], t.shape[0]], type: 'F32', byteLength: t.shape[0] * t.shape[1] * 4 }));
  const data = new Map(plan.map((t) => [ggufName(t.name), quantize('F32', referenceTensor(qwen3, t.name))]));
  editTensors(list);
  const { header, offsets, fileSize } = ggufHeader(meta, list);
  const out = new Uint8Array(fileSize);
  out.set(header);
  list.forEach((t, i) => out.set((data.get(t.name) ?? new Uint8Array(t.byteLength)).subarray(0, t.byteLength), offsets[i]));
  return out;
}

const refusal = (bytes: Uint8Array): Promise<Error> => rejectionOf(readGguf(source(bytes)), 'the GGUF to be refused');

describe('Qwen3 GGUF (architecture qwen3)', () => {
  it('reads qwen3.* keys, a key_length of its own, F32 attn_q_norm/attn_k_norm of head_dim, rotate_half rows, no biases', async () => {
    const bytes = encodeGguf(qwen3, 'f32', kv);
    const h = await readGgufHeader(source(bytes));
    expect(h.metadata['general.architecture']).toBe('qwen3');
    expect(h.metadata['qwen3.attention.key_length']).toBe(24);
    expect(h.tensors.find((t) => t.name === 'blk.1.attn_k_norm.weight')).toMatchObject({ dims: [24], type: 0 });
    expect(h.tensors.some((t) => t.name.endsWith('.bias'))).toBe(false);
    const { layout, model } = await loadGgufDequantized(bytes);
    expect(layout.config).toEqual({ ...TINY_QWEN3, normEps: Math.fround(1e-6) });
    expect(layout.tensors.find((t) => t.name === 'layers.1.attention.q_norm')).toMatchObject({ shape: [1, 24], dtype: 'f32', byteLength: 24 * 4 });
    for (const k of ['qNorm', 'kNorm', 'wq', 'wk', 'wo'] as const) expect(model.weights[k], k).toEqual(qwen3.weights[k]);
    expect(greedy(model)).toEqual(greedy(qwen3));
  });

  it('every rank holds the whole q/k norm weights (replicated), whatever the head split', async () => {
    const { layout } = await loadGgufDequantized(encodeGguf(qwen3, 'f32', kv));
    for (const split of [{ tensorParallel: 2 }, { tensorParallel: 2, split: [3, 1] }, { tensorParallel: 4 }]) {
      const plan = makePlan(layout.config, split, layout.tensors);
      for (const r of plan.ranks) {
        for (const name of ['layers.0.attention.q_norm', 'layers.1.attention.k_norm']) {
          expect(r.slices.find((s) => s.name === name), `${JSON.stringify(split)} rank ${r.rank} ${name}`).toMatchObject({ style: 'replicated', shape: [1, 24] });
        }
      }
    }
  });

  it('Q8_0 Qwen3: matrices stay q8_0, the q/k norms stay f32 vectors', async () => {
    const c = { ...TINY_QWEN3, dim: 64 }; // rows of 64 take blocks of 32
    const { layout } = await loadGgufDequantized(encodeGguf({ config: c, weights: randomWeights(c, 4) }, 'q8_0', kv));
    const dtypes = Object.fromEntries(layout.tensors.map((t) => [t.name, t.dtype]));
    expect(dtypes).toMatchObject({ 'layers.0.attention.wq': 'q8_0', 'layers.0.attention.q_norm': 'f32', 'layers.1.attention.k_norm': 'f32' });
  });

  it('refuses a Qwen3 without a q/k norm, with one of the wrong size, or with Qwen2\'s biases', async () => {
    const drop = (name: string) => (l: GgufTensorOut[]) => void l.splice(l.findIndex((t) => t.name === name), 1);
    expect((await refusal(edited(() => {}, drop('blk.1.attn_k_norm.weight')))).message).toMatch(/lacks 1 tensor\(s\).*blk\.1\.attn_k_norm\.weight/);
    const small = edited(() => {}, (l) => void (l.find((t) => t.name === 'blk.0.attn_q_norm.weight')!.dims = [10]));
    expect((await refusal(small)).message).toMatch(/"blk\.0\.attn_q_norm\.weight" has dims \[10\], the metadata implies \[24\]/);
    const biased = edited(() => {}, (l) => void l.splice(2, 0, { name: 'blk.0.attn_q.bias', dims: [96], type: 'F32', byteLength: 96 * 4 }));
    const e = await refusal(biased);
    expect(e).toBeInstanceOf(ModelFormatError);
    expect(e.message).toMatch(/"blk\.0\.attn_q\.bias" is not part of a Qwen3 model/);
  });

  it('fuzzed: a Qwen3 file with bytes changed or cut reads or fails with a ModelFormatError', async () => {
    const good = encodeGguf(qwen3, 'f32', kv);
    const mutation = fc.record({
      flips: fc.array(fc.record({ at: fc.nat({ max: 30_000 }), value: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 4 }),
      cut: fc.option(fc.nat({ max: good.byteLength })),
    });
    await fc.assert(fc.asyncProperty(mutation, async ({ flips, cut }) => {
      const bytes = good.slice(0, cut ?? undefined);
      for (const f of flips) if (f.at < bytes.byteLength) bytes[f.at] = f.value;
      try {
        await readGguf(source(bytes));
      } catch (e) {
        expect(e).toBeInstanceOf(ModelFormatError);
      }
    }), { numRuns: 100, seed: 5 });
  });
});

/** Qwen3-0.6B's config.json as the Hub has it. */
const QWEN3_0_6B = {
  architectures: ['Qwen3ForCausalLM'], attention_bias: false, attention_dropout: 0.0, bos_token_id: 151643, eos_token_id: 151645,
  head_dim: 128, hidden_act: 'silu', hidden_size: 1024, initializer_range: 0.02, intermediate_size: 3072, max_position_embeddings: 40960,
  max_window_layers: 28, model_type: 'qwen3', num_attention_heads: 16, num_hidden_layers: 28, num_key_value_heads: 8, rms_norm_eps: 1e-6,
  rope_scaling: null, rope_theta: 1000000, sliding_window: null, tie_word_embeddings: true, torch_dtype: 'bfloat16', use_cache: true,
  use_sliding_window: false, vocab_size: 151936,
};

describe('Qwen3 in Hugging Face form (Qwen3ForCausalLM)', () => {
  it('reads Qwen3-0.6B\'s config.json: q/k norms, head_dim 128 beside hidden 1024 / 16 heads, no biases, no sliding window', () => {
    const h = parseHfConfig(QWEN3_0_6B);
    expect(h.architecture).toBe('Qwen3ForCausalLM');
    expect(h.config).toEqual({
      dim: 1024, hiddenDim: 3072, nLayers: 28, nHeads: 16, nKvHeads: 8, vocabSize: 151936, seqLen: 40960, headSize: 128,
      sharedClassifier: true, normEps: 1e-6, ropeTheta: 1e6, ropeStyle: 'rotate_half', qkNorm: true,
    });
    expect(h.slidingWindow).toBeUndefined();
    expect(h.eosTokenIds).toEqual([151645]);
    // attention_bias puts biases on q, k, v and o, beside the norms
    expect(parseHfConfig({ ...QWEN3_0_6B, attention_bias: true }).config).toMatchObject({ qkvBias: true, outBias: true, qkNorm: true });
    expect(parseHfConfig({ ...QWEN3_0_6B, use_sliding_window: true, sliding_window: 4096 }).slidingWindow).toBe(4096);
    expect(() => parseHfConfig({ ...QWEN3_0_6B, rope_scaling: { rope_type: 'yarn', factor: 4 } })).toThrow(/"yarn" is not supported/);
  });

  it('a Qwen3 checkpoint\'s q_norm/k_norm load as the plan\'s q/k norms: the oracle on the files is the oracle on the model', async () => {
    const files = exportHf(TINY_QWEN3, qwen3.weights, { dtype: 'BF16', eosTokenId: 3 });
    expect(JSON.parse(new TextDecoder().decode(files.get('config.json')))).toMatchObject({ architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', head_dim: 24 });
    const m = await openHfModel(mapFiles(files));
    expect(m.config).toEqual(TINY_QWEN3);
    expect(m.tensors.find((t) => t.name === 'layers.0.attention.k_norm')).toMatchObject({ shape: [1, 24], dtype: 'f32' });
    const model = { config: m.config, weights: stackWeights(m.config, m.tensors, await readBytes(m.source)) };
    expect(model.weights.qNorm).toEqual(qwen3.weights.qNorm);
    expect(greedy(model)).toEqual(greedy(qwen3));
  });

  it('an interleaved model written as Qwen3 has its q/k norm weights permuted with its q/k rows: the same function', async () => {
    const c = { ...TINY_QWEN3, ropeStyle: 'interleaved' as const };
    const files = exportHf(c, qwen3.weights);
    const m = await openHfModel(mapFiles(files));
    expect(m.config.ropeStyle).toBe('rotate_half');
    const model = { config: m.config, weights: stackWeights(m.config, m.tensors, await readBytes(m.source)) };
    expect(model.weights.qNorm).not.toEqual(qwen3.weights.qNorm);
    const want = greedy({ config: c, weights: qwen3.weights });
    expect(greedy(model)).toEqual(want);
  });
});

describe('the oracle\'s q/k norm', () => {
  it('normalises each head on its own: a head\'s scale leaves the step\'s output (almost) unchanged, dropping the norm does not', () => {
    const hs = TINY_QWEN3.headSize;
    const x = Float32Array.from({ length: 3 * 7 * hs }, (_, i) => Math.sin(i * 0.37) * (1 + (i % 5)));
    const y = x.slice();
    R.headNorm(y, 3, 7 * hs, 7, hs, qwen3.weights.qNorm!.subarray(0, hs), 1e-6);
    const z = x.map((v, i) => (Math.floor(i / hs) % 2 ? v * 8 : v));
    R.headNorm(z, 3, 7 * hs, 7, hs, qwen3.weights.qNorm!.subarray(0, hs), 1e-6);
    for (let i = 0; i < y.length; i++) expect(Math.abs(z[i]! - y[i]!)).toBeLessThan(1e-5);
    // wq scaled by 4 in every layer: the norm undoes it
    const scaled = { ...qwen3.weights, wq: qwen3.weights.wq.map((v) => v * 4) };
    const logits = (w: R.TransformerWeights) => R.forward({ config: TINY_QWEN3, weights: w }, R.createRunState(TINY_QWEN3), 9, 0).slice();
    const a = logits(qwen3.weights);
    const b = logits(scaled);
    for (let i = 0; i < a.length; i++) expect(Math.abs(a[i]! - b[i]!)).toBeLessThan(1e-4);
    const { qNorm: _q, kNorm: _k, ...plain } = qwen3.weights;
    expect(greedy({ config: TINY_QWEN3, weights: plain })).not.toEqual(greedy(qwen3));
  });
});
