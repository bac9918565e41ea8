import { describe, expect, it } from 'vitest';
import { PlanError } from '../errors.js';
import { c110, kTable } from '../../test-support/model/kquant-table.js';
import { cpuRankBytes, rankShapes } from '../engine/cpu-memory.js';
import { llama2cTensorTable } from '../model/formats/llama2c.js';
import { wholeUnitHeads } from './axis-split.js';
import { degreeSplit, makePlan, rankWeightBytes } from './plan.js';

// stories110M-shaped: 12 heads of 64, hidden 2048, vocab 32000; as K-quant, wo's 768 inputs are 3 super-blocks.
const k = kTable(c110);
const f32 = llama2cTensorTable(c110);
const ranges = (opts: Parameters<typeof makePlan>[1], t = k) => makePlan(c110, opts, t).ranks.map((r) => [r.heads, r.kvHeads, r.hidden, r.vocab]);
const thrown = (f: () => unknown): PlanError => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(PlanError);
    return e as PlanError;
  }
  throw new Error('expected a PlanError');
};

describe('a split per axis', () => {
  it('heads 8:4 with the MLP and vocab even, against 8:4 on every axis', () => {
    expect(ranges({ tensorParallel: 2, axes: { heads: [8, 4] } })).toEqual([
      [[0, 8], [0, 8], [0, 1024], [0, 16000]],
      [[8, 12], [8, 12], [1024, 2048], [16000, 32000]],
    ]);
    // the all-axis form puts two thirds of the MLP and vocab on rank 0 too
    expect(ranges({ tensorParallel: 2, fractions: [2, 1] })).toEqual([
      [[0, 8], [0, 8], [0, 1280], [0, 21333]],
      [[8, 12], [8, 12], [1280, 2048], [21333, 32000]],
    ]);
    // the rank count comes from the shares when tensorParallel is not given
    expect(ranges({ axes: { heads: [2, 1] } })).toEqual(ranges({ tensorParallel: 2, axes: { heads: [8, 4] } }));
  });

  it('axes override fractions one by one; an axis left out follows fractions, or is even without them', () => {
    const r = ranges({ fractions: [1, 1], axes: { heads: [2, 1], vocab: [3, 1] } });
    expect(r.map((x) => x[0])).toEqual([[0, 8], [8, 12]]);
    expect(r.map((x) => x[2])).toEqual([[0, 1024], [1024, 2048]]);
    expect(r.map((x) => x[3])).toEqual([[0, 24000], [24000, 32000]]);
    // heads even (f32 wo splits anywhere), the MLP alone uneven, in whole blocks of 64
    const h = ranges({ axes: { hidden: [1, 3] } }, f32);
    expect(h.map((x) => x[0])).toEqual([[0, 6], [6, 12]]);
    expect(h.map((x) => x[2])).toEqual([[0, 512], [512, 2048]]);
    expect(h.map((x) => x[3])).toEqual([[0, 16000], [16000, 32000]]);
  });

  it('validation: whole super-blocks, one share per rank on every axis, nobody gets nothing', () => {
    // the heads alone even still cuts wo's super-block, whatever the other axes say
    expect(thrown(() => makePlan(c110, { axes: { hidden: [1, 1] } }, k)).message).toMatch(/column 384 of wo, inside a K-quant super-block of 256/);
    expect(thrown(() => makePlan(c110, { axes: { heads: [1, 1] } }, k)).message).toMatch(/column 384 of wo/);
    expect(thrown(() => makePlan(c110, { tensorParallel: 3, axes: { heads: [2, 1] } }, k)).message).toMatch(/the heads shares name 2 ranks, but the split has 3/);
    expect(thrown(() => makePlan(c110, { fractions: [1, 1, 1], axes: { vocab: [1, 1] } }, k)).message).toMatch(/the vocab shares name 2 ranks, but the split has 3/);
    expect(thrown(() => makePlan(c110, { axes: { heads: [2, 1], hidden: [1, 1, 1] } }, k)).message).toMatch(/the hidden shares name 3 ranks, but the split has 2/);
    expect(thrown(() => makePlan(c110, { axes: { heads: [2, -1] } }, k)).message).toMatch(/the heads shares must be a non-empty list of positive numbers/);
    expect(thrown(() => makePlan(c110, { axes: { heads: [] } }, k)).message).toMatch(/non-empty list/);
    expect(thrown(() => makePlan(c110, { axes: { kvHeads: [1, 1] } as never }, k)).message).toMatch(/axes has no axis kvHeads: the axes are heads, hidden, vocab/);
    expect(thrown(() => makePlan(c110, { tensorParallel: 2, axes: { heads: [8, 4], hidden: [1, 1e-9] } }, k)).message).toMatch(/rank 1 gets none of the MLP hidden units/);
    expect(thrown(() => makePlan(c110, { tensorParallel: 2, axes: { heads: [8, 4], vocab: [1, 1e-9] } }, k)).message).toMatch(/rank 1 gets none of the vocab rows/);
    expect(thrown(() => makePlan(c110, { axes: { heads: [1, 1e-9] } }, f32)).message).toMatch(/rank 1's fraction 1e-9 gives it none of the 12 query heads/);
    // the MLP's shares keep w2's super-blocks whole too
    const p = makePlan(c110, { tensorParallel: 2, axes: { heads: [8, 4], hidden: [1, 2] } }, k);
    expect(p.ranks.map((r) => r.hidden)).toEqual([[0, 768], [768, 2048]]);
  });

  it('the even TP 2 error names the degrees and, in its remedy, the per-axis split that works', () => {
    const e = thrown(() => makePlan(c110, { tensorParallel: 2 }, k));
    expect(e.message).toMatch(/rank 1's heads start at column 384 of wo, inside a K-quant super-block of 256 \(head size 64\); even splits that keep them whole: tensorParallel 1, 3\. /);
    expect(e.remedy).toMatch(/at 2 ranks, split the heads alone: split \{heads: \[8, 4\]\} \(CLI --split heads=8,4\), which keeps the MLP and vocab even/);
    // and what it names is accepted
    expect(() => makePlan(c110, { tensorParallel: 2, axes: { heads: [8, 4] } }, k)).not.toThrow();
    // no per-axis split exists at 4 ranks (3 super-blocks): the remedy does not invent one
    expect(thrown(() => makePlan(c110, { tensorParallel: 4 }, k)).remedy).not.toMatch(/split the heads alone/);
  });

  it('degreeSplit: even where that keeps the blocks, the heads alone in whole blocks where it does not, else none', () => {
    expect([1, 2, 3, 4, 5, 6, 12].map((d) => degreeSplit(c110, d, k))).toEqual([
      { tensorParallel: 1 }, { tensorParallel: 2, axes: { heads: [8, 4] } }, { tensorParallel: 3 }, undefined, undefined, undefined, undefined,
    ]);
    expect([2, 3, 4, 5].map((d) => degreeSplit(c110, d, f32))).toEqual([{ tensorParallel: 2 }, { tensorParallel: 3 }, { tensorParallel: 4 }, undefined]);
    expect(wholeUnitHeads(12, 4, 2)).toEqual([8, 4]);
    expect(wholeUnitHeads(14, 4, 2)).toEqual([8, 6]);
    expect(wholeUnitHeads(6, 4, 2)).toEqual([4, 2]);
    expect(wholeUnitHeads(12, 4, 4)).toBeUndefined();
  });

  it('memory per rank follows the per-axis sizes: rank 0 holds ~0.56 of the matrices, not 0.67', () => {
    const perAxis = makePlan(c110, { tensorParallel: 2, axes: { heads: [8, 4] } }, f32);
    const allAxes = makePlan(c110, { tensorParallel: 2, fractions: [2, 1] }, f32);
    for (const p of [perAxis, allAxes]) for (const r of p.ranks) expect(r.byteLength).toBe(rankWeightBytes(c110, r));
    const replicated = rankWeightBytes(c110, { heads: [0, 0], kvHeads: [0, 0], hidden: [0, 0], vocab: [0, 0] });
    const share = (p: typeof perAxis) => (p.ranks[0]!.byteLength - replicated) / p.ranks.reduce((n, r) => n + r.byteLength - replicated, 0);
    const L = c110.nLayers;
    expect(share(perAxis)).toBeCloseTo((L * (4 * 8 * 64 * 768 + 3 * 1024 * 768) + 16000 * 768) / (L * (4 * 768 * 768 + 3 * 2048 * 768) + 32000 * 768), 6);
    expect(share(perAxis)).toBeLessThan(0.57);
    expect(share(allAxes)).toBeGreaterThan(0.66);
    // the CPU memory count takes the same sizes, K-quant tiles included
    const sizes = { contextLength: 256, maxBatch: 1, maxRows: 8, kvBytes: 4 };
    const opts = { tensorParallel: 2, axes: { heads: [8, 4] } };
    const shapes = rankShapes(c110, k, opts);
    const plan = makePlan(c110, opts, k);
    expect(shapes.map((r) => [r.heads, r.hidden, r.vocab])).toEqual(plan.ranks.map((r) => [r.heads, r.hidden, r.vocab]));
    expect(shapes.map((r) => r.byteLength)).toEqual(plan.ranks.map((r) => r.byteLength));
    expect(shapes.map((r) => cpuRankBytes(c110, r, sizes).total)).toEqual(plan.ranks.map((r) => cpuRankBytes(c110, r, sizes).total));
  });
});
