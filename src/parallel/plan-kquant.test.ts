import { describe, expect, it } from 'vitest';
import { PlanError } from '../errors.js';
import { c110, kTable } from '../../test-support/model/kquant-table.js';
import { makePlan } from './plan.js';

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
