import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PlanError } from '../errors.js';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { llama2cV2TensorTable, loadLlama2cV2 } from '../model/formats/llama2c-v2.js';
import { llama2cConfig } from '../model/synth.js';
import { makePlan, q8ScalesOffset, sliceListHash, type Plan } from './plan.js';

const bytes = readArrayBuffer(resolve(modelsDir, 'stories260K-q8.bin'));
const file = new Uint8Array(bytes);
const model = loadLlama2cV2(bytes);
const { config, tensors } = model;

/** A rank's dense slice of one tensor, gathered from the file by its ranges: (values, scales). */
function gather(plan: Plan, rank: number, name: string): { q: Int8Array; s: Float32Array; shape: [number, number] } {
  const sl = plan.ranks[rank]!.slices.find((x) => x.name === name)!;
  const out = new Uint8Array(sl.byteLength);
  for (const g of sl.ranges) out.set(file.subarray(g.fileOffset, g.fileOffset + g.length), g.dstOffset);
  const n = sl.shape[0] * sl.shape[1];
  return { q: new Int8Array(out.buffer, 0, n), s: new Float32Array(out.buffer, q8ScalesOffset(n), n / sl.groupSize!), shape: sl.shape };
}

describe('plans for Q8_0 tensors (stories260K-q8, group size 4)', () => {
  it('splits the MLP in whole groups: hidden 172 at TP 2 is 88 + 84, not 86 + 86', () => {
    const plan = makePlan(config, { tensorParallel: 2 }, tensors);
    expect(plan.ranks.map((r) => r.hidden)).toEqual([[0, 88], [88, 172]]);
    const f32 = makePlan(config, { tensorParallel: 2 });
    expect(f32.ranks.map((r) => r.hidden)).toEqual([[0, 86], [86, 172]]); // f32 files keep the plain even split
    const uneven = makePlan(config, { fractions: [1, 2] }, tensors);
    for (const r of uneven.ranks) expect(r.hidden.every((h) => h % 4 === 0)).toBe(true);
  });

  it.each([1, 2, 4, 8])('each rank\'s values and scales are exactly its part of every matrix, at TP %i', (tp) => {
    const plan = makePlan(config, { tensorParallel: tp }, tensors);
    for (const [rank, rp] of plan.ranks.entries()) {
      const w2 = gather(plan, rank, 'layers.3.feed_forward.w2'); // row split: columns hidden[0]..hidden[1]
      const src = model.weights.w2[3]!;
      const [a, b] = rp.hidden;
      expect(w2.shape).toEqual([64, b - a]);
      // Each value and the scale of its group, element by element, compared in one expect each.
      const n = 64 * (b - a);
      const [gotQ, wantQ, gotS, wantS] = [new Int8Array(n), new Int8Array(n), new Float32Array(n), new Float32Array(n)];
      for (let i = 0; i < 64; i++) {
        for (let j = 0; j < b - a; j++) {
          const k = i * (b - a) + j;
          [gotQ[k], wantQ[k]] = [w2.q[k]!, src.q[i * 172 + a + j]!];
          [gotS[k], wantS[k]] = [w2.s[(k / 4) | 0]!, src.s[((i * 172 + a + j) / 4) | 0]!];
        }
      }
      expect(gotQ).toEqual(wantQ);
      expect(gotS).toEqual(wantS);
      const wk = gather(plan, rank, 'layers.1.attention.wk'); // column split: rows of its kv heads
      const [k0, k1] = rp.kvHeads.map((h) => h * 8);
      expect(Array.from(wk.q)).toEqual(Array.from(model.weights.wk[1]!.q.subarray(k0! * 64, k1! * 64)));
      expect(Array.from(wk.s)).toEqual(Array.from(model.weights.wk[1]!.s.subarray((k0! * 64) / 4, (k1! * 64) / 4)));
      const out = gather(plan, rank, 'output'); // vocab split of the shared embedding
      expect(Array.from(out.q)).toEqual(Array.from(model.weights.tokens.q.subarray(rp.vocab[0] * 64, rp.vocab[1] * 64)));
      const emb = gather(plan, rank, 'tok_embeddings'); // replicated
      expect(emb.q.length).toBe(512 * 64);
      expect(emb.s[8191]).toBe(model.weights.tokens.s[8191]);
    }
  });

  it('a head split inside a group of wo\'s columns is a PlanError', () => {
    // head size 8, groups of 16: at TP 8 rank 1's heads would start at column 8
    const c = llama2cConfig({ dim: 64, hiddenDim: 64, nLayers: 1, nHeads: 8, nKvHeads: 8, vocabSize: 32, seqLen: 8 });
    const t = llama2cV2TensorTable(c, 16);
    expect(makePlan(c, { tensorParallel: 4 }, t).world).toBe(4);
    expect(() => makePlan(c, { tensorParallel: 8 }, t)).toThrow(PlanError);
    expect(() => makePlan(c, { tensorParallel: 8 }, t)).toThrow(/inside a quantisation group of 16/);
  });

  it('cache keys tell a quantised shard from an f32 one', () => {
    const q = makePlan(config, { tensorParallel: 1 }, tensors).ranks[0]!;
    const f = makePlan(config, { tensorParallel: 1 }).ranks[0]!;
    expect(sliceListHash(q)).not.toBe(sliceListHash(f));
    // every byte but the header, plus the embedding again as the (tied) classifier: values and scales
    expect(q.byteLength).toBe(bytes.byteLength - 256 + 512 * 64 * 2);
  });
});
