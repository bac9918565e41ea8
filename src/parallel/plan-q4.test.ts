import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PlanError } from '../errors.js';
import type { TensorInfo } from '../model/config.js';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { loadLlama2c } from '../model/formats/llama2c.js';
import { dequantizeQ4 } from '../model/reference-q4.js';
import { q4Layout } from '../../test-support/model/q4-layout.js';
import { makePlan, quantScalesOffset, sliceListHash, type Plan } from './plan.js';

const bytes = readArrayBuffer(resolve(modelsDir, 'stories260K.bin'));
const { config, tensors } = loadLlama2c(bytes);
// Every matrix whose rows are whole groups of 32 as q4_0; w2 (172 columns) and the norms f32.
const layout = q4Layout(bytes, tensors, () => true);
const file = new Uint8Array(layout.bytes);

/** A rank's dense slice of one q4_0 tensor, gathered from the layout by its ranges, dequantised. */
function gather(plan: Plan, rank: number, name: string): { w: Float32Array; shape: [number, number]; byteLength: number } {
  const sl = plan.ranks[rank]!.slices.find((x) => x.name === name)!;
  expect(sl.dtype).toBe('q4_0');
  expect(sl.groupSize).toBe(32);
  const out = new Uint8Array(sl.byteLength);
  for (const g of sl.ranges) out.set(file.subarray(g.fileOffset, g.fileOffset + g.length), g.dstOffset);
  const n = sl.shape[0] * sl.shape[1];
  const t = { q: new Uint8Array(out.buffer, 0, n / 2), s: new Float32Array(out.buffer, quantScalesOffset('q4_0', n), n / 32) };
  return { w: dequantizeQ4(t, n), shape: sl.shape, byteLength: sl.byteLength };
}

describe('plans for Q4_0 tensors (stories260K, groups of 32)', () => {
  it('each rank\'s nibbles and scales are exactly its part of every matrix, at TP 1 and 2', () => {
    for (const tp of [1, 2]) {
      const plan = makePlan(config, { tensorParallel: tp }, layout.tensors);
      for (const [rank, rp] of plan.ranks.entries()) {
        const [h0, h1] = rp.heads.map((h) => h * 8) as [number, number];
        const wo = gather(plan, rank, 'layers.3.attention.wo'); // row split: its heads' columns, whole groups
        const src = layout.oracle.weights.wo.subarray(3 * 64 * 64, 4 * 64 * 64);
        expect(wo.shape).toEqual([64, h1 - h0]);
        for (let i = 0; i < 64; i++) expect(Array.from(wo.w.subarray(i * (h1 - h0), (i + 1) * (h1 - h0)))).toEqual(Array.from(src.subarray(i * 64 + h0, i * 64 + h1)));
        const wv = gather(plan, rank, 'layers.1.attention.wv'); // column split: rows of its kv heads
        const [k0, k1] = rp.kvHeads.map((h) => h * 8) as [number, number];
        expect(Array.from(wv.w)).toEqual(Array.from(layout.oracle.weights.wv.subarray(1 * 32 * 64 + k0 * 64, 1 * 32 * 64 + k1 * 64)));
        const out = gather(plan, rank, 'output'); // vocab split of the shared embedding
        expect(Array.from(out.w)).toEqual(Array.from(layout.oracle.weights.wcls.subarray(rp.vocab[0] * 64, rp.vocab[1] * 64)));
        const emb = gather(plan, rank, 'tok_embeddings'); // replicated
        expect(emb.byteLength).toBe((512 * 64) / 2 + (512 * 64) / 32 * 4);
        // w2 stays f32 (172 columns): the MLP splits as an f32 model's, 86 + 86
        expect(plan.ranks[rank]!.slices.find((s) => s.name === 'layers.0.feed_forward.w2')!.dtype).toBe('f32');
      }
      if (tp === 2) expect(plan.ranks.map((r) => r.hidden)).toEqual([[0, 86], [86, 172]]);
    }
  });

  it('a head split inside a group of 32 of wo\'s columns is a PlanError (head size 8: TP 4 starts rank 1 at column 16)', () => {
    expect(() => makePlan(config, { tensorParallel: 4 }, layout.tensors)).toThrow(PlanError);
    expect(() => makePlan(config, { tensorParallel: 4 }, layout.tensors)).toThrow(/column 16 of wo, inside a quantisation group of 32/);
    // uneven fractions: heads 4 + 2 + 2 start rank 2 at column 48
    expect(() => makePlan(config, { fractions: [2, 1, 1] }, layout.tensors)).toThrow(/column 48/);
  });

  it('a q4_0 tensor that groups of 32 cannot tile (w2 of hidden 172), or with another group size, is a PlanError', () => {
    const w2 = layout.tensors.find((t) => t.name === 'layers.0.feed_forward.w2')!;
    const bad: TensorInfo = { ...w2, dtype: 'q4_0', byteLength: (64 * 172) / 2, quant: { groupSize: 32, scaleOffset: w2.offset } };
    const t1 = layout.tensors.map((t) => (t.name === w2.name ? bad : t));
    expect(() => makePlan(config, { tensorParallel: 1 }, t1)).toThrow(/layers.0.feed_forward.w2: q4_0 groups of 32 must tile its rows of 172 values/);
    const wq = layout.tensors.find((t) => t.name === 'layers.0.attention.wq')!;
    const t2 = layout.tensors.map((t) => (t.name === wq.name ? { ...wq, quant: { groupSize: 16, scaleOffset: wq.quant!.scaleOffset } } : t));
    expect(() => makePlan(config, { tensorParallel: 1 }, t2)).toThrow(/needs a group size of 32, got 16/);
  });

  it('MLP splits of a q4_0 w2 are made in whole groups of 32', () => {
    // dim 64, hidden 96 (3 groups): TP 2 gives 64 + 32, not 48 + 48
    const c = { ...config, hiddenDim: 96, nLayers: 1 };
    const t: TensorInfo[] = [];
    let off = 0;
    const add = (name: string, rows: number, cols: number, q: boolean) => {
      const n = rows * cols;
      if (q) {
        t.push({ name, offset: off, shape: [rows, cols], dtype: 'q4_0', byteLength: n / 2, quant: { groupSize: 32, scaleOffset: off + n / 2 } });
        off += n / 2 + (n / 32) * 4;
      } else {
        t.push({ name, offset: off, shape: [rows, cols], dtype: 'f32', byteLength: n * 4 });
        off += n * 4;
      }
    };
    add('tok_embeddings', 512, 64, true);
    add('layers.0.attention_norm', 1, 64, false);
    add('layers.0.attention.wq', 64, 64, true);
    add('layers.0.attention.wk', 32, 64, true);
    add('layers.0.attention.wv', 32, 64, true);
    add('layers.0.attention.wo', 64, 64, true);
    add('layers.0.ffn_norm', 1, 64, false);
    add('layers.0.feed_forward.w1', 96, 64, true);
    add('layers.0.feed_forward.w2', 64, 96, true);
    add('layers.0.feed_forward.w3', 96, 64, true);
    add('norm', 1, 64, false);
    t.push({ ...t[0]!, name: 'output', aliasOf: 'tok_embeddings' });
    const plan = makePlan(c, { tensorParallel: 2 }, t);
    expect(plan.ranks.map((r) => r.hidden)).toEqual([[0, 64], [64, 96]]);
    const w2 = plan.ranks[1]!.slices.find((s) => s.name === 'layers.0.feed_forward.w2')!;
    expect(w2.shape).toEqual([64, 32]);
    // 64 rows × 16 bytes of nibbles, then 64 scales
    expect(w2.byteLength).toBe(64 * 16 + 64 * 4);
    expect(w2.ranges[0]).toEqual({ fileOffset: t[8]!.offset + 32, length: 16, dstOffset: 0 });
  });

  it('cache keys tell a q4_0 shard from an f32 one; a rank uploads nibbles and scales, not floats', () => {
    const q = makePlan(config, { tensorParallel: 1 }, layout.tensors).ranks[0]!;
    const f = makePlan(config, { tensorParallel: 1 }).ranks[0]!;
    expect(sliceListHash(q)).not.toBe(sliceListHash(f));
    // the whole layout once, plus the embedding again as the tied classifier
    const emb = layout.tensors.find((t) => t.name === 'tok_embeddings')!;
    expect(q.byteLength).toBe(layout.bytes.byteLength + emb.byteLength + (512 * 64) / 32 * 4);
  });
});
