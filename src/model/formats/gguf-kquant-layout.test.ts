import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ModelFormatError } from '../../errors.js';
import type { ByteSource } from '../../loader/source.js';
import { ggufStream } from '../../loader/gguf-stream.js';
import { makePlan } from '../../parallel/plan.js';
import { collectBytes, packRank } from '../../../test-support/model/shard-bytes.js';
import { modelsDir } from '../../../test-support/fixtures/paths.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';
import { layoutGguf, loadGgufDequantized, readGguf, readGgufHeader, type HeadSource } from './gguf.js';
import { referenceTensor } from './gguf-write.js';
import { commonForm, sliceValues, sliceViews, type SliceView } from '../../../workers/slice-views.js';
import { dequantizeQ8m } from '../../../workers/q8m-views.js';
import { createCpuBackend } from '../../../workers/cpu-backend.js';
import { cpuBlocker } from '../../engine/device-measure.js';
import { cpuRankBytes, evenRankShapes } from '../../engine/cpu-memory.js';
import { allOf, encodeTypedGguf, kquantModel, q4kmMix } from '../../../test-support/model/kquant-gguf.js';

const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
const model = kquantModel();
const mixed = encodeTypedGguf(model, q4kmMix, tok);

function source(bytes: Uint8Array, name = 'kq.gguf'): HeadSource & ByteSource {
  return {
    name, identity: async () => name, size: async () => bytes.byteLength, head: async (n) => bytes.subarray(0, n), range: async (a, b) => bytes.subarray(a, b),
    async *chunks() {
      for (let o = 0; o < bytes.byteLength; o += 1000) yield bytes.slice(o, o + 1000);
    },
  } as HeadSource & ByteSource;
}

async function stream(bytes: Uint8Array): Promise<Uint8Array> {
  return collectBytes(ggufStream(source(bytes), await readGguf(source(bytes))));
}

const valuesOf = (v: SliceView): Float32Array => (v.dtype === 'q8_m' ? dequantizeQ8m(v) : v.dtype === 'f32' ? v.f : new Float32Array(0));
/** Where two arrays first differ, or −1 (±0 count as one: code · scale + min gives +0 where ggml's (q − 32)·d gives −0). */
function firstDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return -2;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return i;
  return -1;
}

describe('GGUF K-quant files: reader, stream, plan and slice views', () => {
  it('lays a Q4_K_M-style mix out as q8_m: groups of 32 (Q4_K) and 16 (Q6_K), super-blocks of 256 kept whole', async () => {
    const { layout } = await loadGgufDequantized(mixed);
    const t = (n: string) => layout.tensors.find((x) => x.name === n)!;
    expect(t('layers.0.attention.wq')).toMatchObject({ dtype: 'q8_m', quant: { groupSize: 32, block: 256 } });
    expect(t('layers.1.attention.wv')).toMatchObject({ dtype: 'q8_m', quant: { groupSize: 16, block: 256 } });
    expect(t('tok_embeddings')).toMatchObject({ dtype: 'q8_m', quant: { groupSize: 16, block: 256 } });
    expect(t('output')).toMatchObject({ aliasOf: 'tok_embeddings', dtype: 'q8_m' });
    expect(t('layers.0.attention_norm').dtype).toBe('f32');
    // Q8_0 and Q4_0 beside K-quants in a fused matrix stay quantised (they fuse in q8_m form)
    expect(t('layers.1.attention.wk')).toMatchObject({ dtype: 'q8_0', quant: { groupSize: 32 } });
    expect(t('layers.0.feed_forward.w3')).toMatchObject({ dtype: 'q4_0', quant: { groupSize: 32 } });
    const q41 = (await loadGgufDequantized(encodeTypedGguf(model, allOf('Q5_1'), tok))).layout.tensors.find((x) => x.name === 'layers.0.attention.wo')!;
    expect(q41.quant).toEqual({ groupSize: 32, scaleOffset: q41.offset + 512 * 512 });
  });

  it('every rank\'s shard, fused as the GPU fuses it, holds the oracle\'s dequantised values at TP 1 and 2', async () => {
    const { layout, model: oracle } = await loadGgufDequantized(mixed);
    const s = await stream(mixed);
    expect(s.byteLength).toBe(layout.streamBytes);
    for (const tp of [1, 2]) {
      const plan = makePlan(layout.config, { tensorParallel: tp }, layout.tensors);
      for (const r of plan.ranks) {
        const views = sliceViews(r, packRank(r, s));
        // wq (Q4_K, groups of 32) beside wv (Q6_K, 16): one q8_m matrix in groups of 16
        const qkv = commonForm(['wq', 'wk', 'wv'].map((k) => views.get(`layers.1.attention.${k}`)!));
        expect(qkv.map((p) => [p.dtype, p.dtype === 'q8_m' ? p.groupSize : 0])).toEqual([['q8_m', 16], ['q8_m', 16], ['q8_m', 16]]);
        const [h0, h1] = r.heads;
        const [k0, k1] = r.kvHeads;
        const hs = layout.config.headSize;
        const dim = layout.config.dim;
        const rows = (name: string, a: number, b: number) => referenceTensor(oracle, name).subarray(a * dim, b * dim);
        expect(firstDiff(valuesOf(qkv[0]!), rows('layers.1.attention.wq', h0 * hs, h1 * hs))).toBe(-1);
        expect(firstDiff(valuesOf(qkv[2]!), rows('layers.1.attention.wv', k0 * hs, k1 * hs))).toBe(-1);
        expect(firstDiff(valuesOf(qkv[1]!), rows('layers.1.attention.wk', k0 * hs, k1 * hs))).toBe(-1); // Q8_0 as q8_m
        const w13 = commonForm(['w1', 'w3'].map((k) => views.get(`layers.0.feed_forward.${k}`)!));
        expect(w13.map((p) => p.dtype)).toEqual(['q8_m', 'q8_m']);
        const [u0, u1] = r.hidden;
        expect(firstDiff(valuesOf(w13[1]!), rows('layers.0.feed_forward.w3', u0, u1))).toBe(-1); // Q4_0 as q8_m
        // wo: the rank's columns of every row
        const wo = valuesOf(views.get('layers.0.attention.wo')!);
        const full = referenceTensor(oracle, 'layers.0.attention.wo');
        const cols = (h1 - h0) * hs;
        const want = new Float32Array(dim * cols);
        for (let i = 0; i < dim; i++) want.set(full.subarray(i * dim + h0 * hs, i * dim + h1 * hs), i * cols);
        expect(firstDiff(wo, want)).toBe(-1);
        expect(firstDiff(valuesOf(views.get('tok_embeddings')!), oracle.weights.tokenEmbeddingTable)).toBe(-1);
        const out = views.get('output')!;
        expect(sliceValues(out)).toBe((r.vocab[1] - r.vocab[0]) * dim);
        expect(firstDiff(valuesOf(out), oracle.weights.wcls.subarray(r.vocab[0] * dim, r.vocab[1] * dim))).toBe(-1);
      }
    }
  });

  it('refuses K-quant rows that are not whole super-blocks, and truncated K-quant data, with ModelFormatError', async () => {
    // a 384-wide model (rows of 1.5 super-blocks) whose wo claims Q4_K
    const narrow = encodeTypedGguf(kquantModel({ ...model.config, dim: 384, nHeads: 6, nKvHeads: 3 }), allOf('Q4_1'), tok);
    const h = await readGgufHeader(source(narrow));
    const bad = { ...h, tensors: h.tensors.map((t) => (t.name === 'blk.0.attn_output.weight' ? { ...t, type: 12 } : t)) };
    expect(() => layoutGguf(h, narrow.byteLength, 'kq.gguf')).not.toThrow();
    expect(() => layoutGguf(bad, narrow.byteLength, 'kq.gguf')).toThrow(ModelFormatError);
    expect(() => layoutGguf(bad, narrow.byteLength, 'kq.gguf')).toThrow(/rows of 384 values do not split into Q4_K blocks of 256/);
    const truncated = mixed.subarray(0, mixed.byteLength - 100);
    await expect(readGguf(source(truncated))).rejects.toThrow(ModelFormatError);
    await expect(readGguf(source(truncated))).rejects.toThrow(/cut short/);
  });

  it('CPU ranks take q8_m weights, each fused part in its own form (Q4_K nibbles beside Q6_K in q6), and auto has no blocker', async () => {
    const { layout } = await loadGgufDequantized(mixed);
    const s = await stream(mixed);
    const [r] = makePlan(layout.config, { tensorParallel: 1 }, layout.tensors).ranks;
    const w = createCpuBackend().createWeights(layout.config, r!, packRank(r!, s));
    const forms = (m: { segments?: readonly { form: string; rows: number }[] }) => m.segments?.map((x) => [x.form, x.rows]);
    // layer 0: wq|wk Q4_K, wv Q6_K; layer 1: wk Q8_0 (codes to 255) between them
    expect(forms(w.layers[0]!.wqkv)).toEqual([['nibble', 768], ['q6', 256]]);
    expect(forms(w.layers[1]!.wqkv)).toEqual([['nibble', 512], ['byte32', 256], ['q6', 256]]);
    expect(w.tokEmbeddings).toMatchObject({ dtype: 'q8_m', layout: 'rows', groupSize: 16 });
    expect(cpuBlocker(layout.tensors, { activations: 'f32', runqExact: false })).toBeUndefined();
    // The memory check counts the tiles: layer 1's Q8_0 wk and layer 0's Q4_0 w3 tile as q8_m, 3/16 byte a value more.
    const extra = ((256 * 512 + 512 * 512) * 3) / 16;
    const sizes = { contextLength: 64, maxBatch: 1, maxRows: 1, kvBytes: 4 };
    expect(cpuRankBytes(layout.config, r!, sizes).shard).toBe(r!.byteLength + extra);
    const [even] = evenRankShapes(layout.config, layout.tensors, 1);
    expect(even).toMatchObject({ byteLength: r!.byteLength, tileExtra: extra });
    expect(w.kernels.mark()).toBeLessThanOrEqual(r!.byteLength + extra);
  });
});
