import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PlanError } from '../errors.js';
import type { ModelConfig, TensorInfo } from '../model/config.js';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { dequantize } from '../model/formats/gguf-blocks.js';
import { loadGgufDequantized } from '../model/formats/gguf.js';
import { encodeGguf } from '../model/formats/gguf-write.js';
import { llama2cTensorTable, loadLlama2c } from '../model/formats/llama2c.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import { makePlan, sliceListHash, type Plan } from './plan.js';

const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
const tok = Tokenizer.parse(new Uint8Array(readArrayBuffer(resolve(modelsDir, 'tok512.bin'))), 512);
const file = encodeGguf(stories, 'f16', tok);
const { layout, model } = await loadGgufDequantized(file);

/** A rank's dense slice of one tensor of the f16 GGUF, gathered by its ranges from the file's halves (the stream is the file's bytes for F16). */
function gather(plan: Plan, rank: number, name: string): { w: Float32Array; shape: [number, number] } {
  const sl = plan.ranks[rank]!.slices.find((x) => x.name === name)!;
  expect(sl.dtype).toBe('f16');
  expect(sl.byteLength % 4).toBe(0);
  const t = layout.tensors.find((x) => x.name === name)!;
  const seg = layout.segments[layout.tensors.indexOf(t)]!;
  const out = new Uint8Array(sl.byteLength);
  // stream offset → file offset: an F16 tensor's stream bytes are its file bytes
  for (const g of sl.ranges) out.set(file.subarray(seg.offset + g.fileOffset - t.offset, seg.offset + g.fileOffset - t.offset + g.length), g.dstOffset);
  const w = new Float32Array(sl.byteLength / 2);
  dequantize('F16', out, w);
  return { w, shape: sl.shape };
}

describe('plans for f16 tensors (stories260K as GGUF F16)', () => {
  it('matrices are f16, 2 bytes a value; norms stay f32', () => {
    const byName = new Map(layout.tensors.map((t) => [t.name, t]));
    expect(byName.get('layers.0.attention.wq')).toMatchObject({ dtype: 'f16', byteLength: 64 * 64 * 2 });
    expect(byName.get('layers.0.feed_forward.w2')).toMatchObject({ dtype: 'f16', shape: [64, 172] });
    expect(byName.get('layers.0.attention_norm')!.dtype).toBe('f32');
    expect(byName.get('tok_embeddings')!.dtype).toBe('f16');
  });

  it('each rank\'s halves are exactly its part of wo, w2 (row splits) and wv (column split), at TP 1, 2 and 4', () => {
    for (const tp of [1, 2, 4]) {
      const plan = makePlan(layout.config, { tensorParallel: tp }, layout.tensors);
      for (const [rank, rp] of plan.ranks.entries()) {
        const [h0, h1] = rp.heads.map((h) => h * 8) as [number, number];
        const wo = gather(plan, rank, 'layers.3.attention.wo');
        const src = model.weights.wo.subarray(3 * 64 * 64, 4 * 64 * 64);
        expect(wo.shape).toEqual([64, h1 - h0]);
        for (let i = 0; i < 64; i++) expect(Array.from(wo.w.subarray(i * (h1 - h0), (i + 1) * (h1 - h0)))).toEqual(Array.from(src.subarray(i * 64 + h0, i * 64 + h1)));
        const [u0, u1] = rp.hidden;
        // the MLP split keeps pairs of halves whole: every rank's hidden range starts and ends even
        expect([u0 % 2, u1 % 2]).toEqual([0, 0]);
        const w2 = gather(plan, rank, 'layers.1.feed_forward.w2');
        const s2 = model.weights.w2.subarray(64 * 172, 2 * 64 * 172);
        for (let i = 0; i < 64; i++) expect(Array.from(w2.w.subarray(i * (u1 - u0), (i + 1) * (u1 - u0)))).toEqual(Array.from(s2.subarray(i * 172 + u0, i * 172 + u1)));
        const [k0, k1] = rp.kvHeads.map((h) => h * 8) as [number, number];
        const wv = gather(plan, rank, 'layers.4.attention.wv');
        expect(Array.from(wv.w)).toEqual(Array.from(model.weights.wv.subarray(4 * 32 * 64 + k0 * 64, 4 * 32 * 64 + k1 * 64)));
      }
    }
  });

  it('an uneven MLP split (fractions) is made in pairs of halves', () => {
    const plan = makePlan(layout.config, { fractions: [1, 2, 2], hiddenBlock: 1 }, layout.tensors);
    for (const r of plan.ranks) expect([r.hidden[0] % 2, r.hidden[1] % 2]).toEqual([0, 0]);
  });

  it('the shard cache key tells f16 slices from f32 ones', () => {
    const f16 = makePlan(layout.config, { tensorParallel: 2 }, layout.tensors);
    const f32 = makePlan(layout.config, { tensorParallel: 2 }, layout.tensors.map((t) => ({ ...t, dtype: 'f32' as const })));
    expect(sliceListHash(f16.ranks[0]!)).not.toBe(sliceListHash(f32.ranks[0]!));
  });
});

describe('f16 splits that would cut a pair of halves', () => {
  const small: ModelConfig = { ...stories.config, dim: 6, nHeads: 2, nKvHeads: 2, headSize: 3, hiddenDim: 8, vocabSize: 16, nLayers: 1 };
  const asF16 = (c: ModelConfig): TensorInfo[] =>
    llama2cTensorTable(c).map((t) => (t.shape[0] > 1 ? { ...t, dtype: 'f16' as const, byteLength: t.byteLength / 2 } : t));

  it('a head split at an odd column of wo is a PlanError naming the pair; TP 1 plans', () => {
    expect(makePlan(small, { tensorParallel: 1 }, asF16(small)).world).toBe(1);
    expect(() => makePlan(small, { tensorParallel: 2 }, asF16(small))).toThrow(PlanError);
    expect(() => makePlan(small, { tensorParallel: 2 }, asF16(small))).toThrow(/rank 1's heads start at column 3 of wo, inside a pair of f16 halves/);
    // the same split with wo in f32 is fine
    const woF32 = asF16(small).map((t) => (t.name.endsWith('attention.wo') ? { ...t, dtype: 'f32' as const, byteLength: t.byteLength * 2 } : t));
    expect(makePlan(small, { tensorParallel: 2 }, woF32).world).toBe(2);
  });

  it('an f16 matrix with rows of an odd length is a PlanError', () => {
    const odd: ModelConfig = { ...small, dim: 5, nHeads: 1, nKvHeads: 1, headSize: 5 };
    expect(() => makePlan(odd, { tensorParallel: 1 }, asF16(odd))).toThrow(/f16 rows are read as pairs of halves, got rows of 5 values/);
  });
});
