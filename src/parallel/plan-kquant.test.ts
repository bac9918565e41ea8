import { describe, expect, it } from 'vitest';
import { PlanError } from '../errors.js';
import type { ModelConfig, TensorInfo } from '../model/config.js';
import { llama2cTensorTable } from '../model/formats/llama2c.js';
import { makePlan } from './plan.js';

/** stories110M's shape: wo's 768 inputs are 3 super-blocks of 256, 12 heads of 64. */
const c110: ModelConfig = {
  dim: 768, hiddenDim: 2048, nLayers: 2, nHeads: 12, nKvHeads: 12, vocabSize: 32000, seqLen: 1024, headSize: 64,
  sharedClassifier: true, normEps: 1e-5, ropeTheta: 10000, ropeStyle: 'interleaved',
};

/** The tensor table with every matrix as a K-quant would be read (q8_m, groups of `group`, super-blocks of 256); block 0: none. */
function kTable(c: ModelConfig, group = 32, block = 256): TensorInfo[] {
  let at = 0;
  const out: TensorInfo[] = [];
  for (const t of llama2cTensorTable(c)) {
    if (t.aliasOf) {
      out.push({ ...out.find((x) => x.name === t.aliasOf)!, name: t.name, aliasOf: t.aliasOf });
      continue;
    }
    const n = t.shape[0] * t.shape[1];
    const matrix = t.shape[0] > 1 && t.shape[1] > 1;
    out.push(matrix
      ? { name: t.name, offset: at, shape: t.shape, dtype: 'q8_m', byteLength: n, quant: { groupSize: group, scaleOffset: at + n, ...(block ? { block } : {}) } }
      : { name: t.name, offset: at, shape: t.shape, dtype: 'f32', byteLength: n * 4 });
    at += matrix ? n + (n / group) * 8 : n * 4;
  }
  return out;
}

describe('plans for K-quant tensors (super-blocks of 256 never split)', () => {
  it('an even TP 2 split of stories110M-shaped wo (1.5 super-blocks a rank) is a PlanError naming the degrees that work', () => {
    const t = kTable(c110);
    let err: unknown;
    try {
      makePlan(c110, { tensorParallel: 2 }, t);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PlanError);
    expect((err as PlanError).message).toMatch(/rank 1's heads start at column 384 of wo, inside a K-quant super-block of 256 \(head size 64\)/);
    expect((err as PlanError).message).toMatch(/even splits that keep them whole: tensorParallel 1, 3\. /);
    expect(() => makePlan(c110, { tensorParallel: 3 }, t)).not.toThrow();
    expect(() => makePlan(c110, { tensorParallel: 4 }, t)).toThrow(PlanError);
  });

  it('an uneven 8:4 head split keeps super-blocks whole: wo and w2 ranges start on multiples of 256 columns', () => {
    const t = kTable(c110);
    const plan = makePlan(c110, { tensorParallel: 2, fractions: [0.6667, 0.3333] }, t);
    expect(plan.ranks.map((r) => r.heads)).toEqual([[0, 8], [8, 12]]);
    for (const r of plan.ranks) {
      expect((r.heads[0] * 64) % 256).toBe(0);
      expect(r.hidden[0] % 256).toBe(0);
      const wo = r.slices.find((s) => s.name === 'layers.0.attention.wo')!;
      expect(wo).toMatchObject({ dtype: 'q8_m', groupSize: 32, shape: [768, (r.heads[1] - r.heads[0]) * 64] });
      // values then (scale, min) pairs: 8 bytes per group of 32
      expect(wo.byteLength).toBe(768 * wo.shape[1] + (768 * wo.shape[1] / 32) * 8);
    }
  });

  it('without the super-block rule the same split is fine: groups of 32 alone never straddle 384', () => {
    expect(() => makePlan(c110, { tensorParallel: 2 }, kTable(c110, 32, 0))).not.toThrow();
  });

  it('MLP units split in whole super-blocks (dim 512, hidden 512: TP 2 is the largest degree)', () => {
    const small = { ...c110, dim: 512, hiddenDim: 512, nHeads: 8, nKvHeads: 4 };
    const plan = makePlan(small, { tensorParallel: 2 }, kTable(small, 16));
    expect(plan.ranks.map((r) => r.hidden)).toEqual([[0, 256], [256, 512]]);
    expect(() => makePlan(small, { tensorParallel: 4 }, kTable(small, 16))).toThrow(/column 128 of wo, inside a K-quant super-block of 256 .*tensorParallel 1, 2\. /);
  });
});
