import { describe, expect, it } from 'vitest';
import { c110, kTable } from '../../test-support/model/kquant-table.js';
import { describeSpec, type DeviceSpec } from '../gpu/core/adapter.js';
import { llama2cTensorTable } from '../model/formats/llama2c.js';
import { evenDegrees, makePlan } from '../parallel/plan.js';
import { headsFromTimes, placeRanks, type AdapterProbe, type Placement, type PlacementDecision, type PlacementEnv } from './placement.js';

// A stories110M-shaped K-quant file: wo's 768 inputs are 3 super-blocks of 256, so only 1 and 3 ranks keep them whole.
const tensors = kTable(c110);
const sizes = { contextLength: 256, maxBatch: 1, maxRows: 8 };
const env = (o: Partial<PlacementEnv>): PlacementEnv => ({ hasGpu: false, cores: 1, kvBytes: 4, tensors, ...o });
const never: AdapterProbe = async () => {
  throw new Error('nothing may be probed here');
};
const noCalibration = async () => {
  throw new Error('calibration must not run here');
};

/** Every placement auto could load from `d`. */
const offered = (d: PlacementDecision): Placement[] => ('candidates' in d ? d.candidates : [d]);

/** The plan each placement would get, as engine.ts builds it: every one must be accepted. */
function expectAccepted(d: PlacementDecision): void {
  for (const p of offered(d)) {
    const opts = { tensorParallel: p.specs.length, fractions: p.fractions, axes: p.axes };
    expect(() => makePlan(c110, opts, tensors), `${p.specs.length} ranks, fractions ${String(p.fractions)}`).not.toThrow();
  }
}

describe('auto on a K-quant-shaped plan offers only degrees and splits the plan accepts', () => {
  it('evenDegrees is exactly the even degrees makePlan accepts', () => {
    expect(evenDegrees(c110, tensors)).toEqual([1, 3]);
    expect(evenDegrees(c110)).toEqual([1, 2, 3, 4, 6, 12]);
    expect(evenDegrees(c110, llama2cTensorTable(c110))).toEqual([1, 2, 3, 4, 6, 12]);
    for (const t of [tensors, kTable(c110, 32, 0), llama2cTensorTable(c110)]) {
      for (let d = 1; d <= c110.nHeads; d++) {
        let ok = true;
        try {
          makePlan(c110, { tensorParallel: d }, t);
        } catch {
          ok = false;
        }
        expect(ok, `TP ${d}`).toBe(evenDegrees(c110, t).includes(d));
      }
    }
  });

  it('CPU ranks: 2 ranks take the heads 8:4 in whole super-blocks with the MLP and vocab even; 4 ranks are never offered', async () => {
    const two = await placeRanks({}, c110, sizes, never, noCalibration, env({ cores: 2 }));
    expect(offered(two).map((p) => p.specs.length)).toEqual([1, 2]);
    const [, pair] = offered(two);
    expect(pair).toMatchObject({ axes: { heads: [8, 4] }, report: { split: 'blocks' } });
    expect(pair!.fractions).toBeUndefined();
    expect(pair!.report.reason).toMatch(/at 2 ranks, query heads 8\/4 in whole super-blocks of wo, the MLP and vocab even/);
    const plan = makePlan(c110, { tensorParallel: 2, axes: pair!.axes }, tensors);
    expect(plan.ranks.map((r) => [r.heads, r.hidden, r.vocab])).toEqual([[[0, 8], [0, 1024], [0, 16000]], [[8, 12], [1024, 2048], [16000, 32000]]]);
    const four = await placeRanks({}, c110, sizes, never, noCalibration, env({ cores: 4 }));
    expect(offered(four).map((p) => p.specs.length)).toEqual([1, 2, 3]);
    expect(offered(four)[2]!.axes).toBeUndefined();
    const cpu = await placeRanks({ devices: 'cpu', tensorParallel: 'auto' }, c110, sizes, never, noCalibration, env({ cores: 8, hasGpu: true }));
    expect(offered(cpu).map((p) => p.specs.length)).toEqual([1, 2, 3]);
    for (const d of [two, four, cpu]) expectAccepted(d);
  });

  it('auto with a given count of CPU ranks takes the per-axis split where the even one cuts a super-block; an explicit split is kept', async () => {
    const two = await placeRanks({ tensorParallel: 2 }, c110, sizes, never, noCalibration, env({ cores: 2 }));
    expect(two).toMatchObject({ axes: { heads: [8, 4] }, report: { split: 'blocks' } });
    const given = await placeRanks({ split: { heads: [2, 1], vocab: [3, 1] } }, c110, sizes, never, noCalibration, env({ cores: 2 }));
    expect(given).toMatchObject({ axes: { heads: [2, 1], vocab: [3, 1] }, report: { split: 'explicit' } });
    const three = await placeRanks({ tensorParallel: 3 }, c110, sizes, never, noCalibration, env({ cores: 2 }));
    expect(three).toMatchObject({ report: { split: 'even' } });
    expect((three as Placement).axes).toBeUndefined();
  });

  it('a degree that is none is refused naming only the degrees that keep super-blocks whole', async () => {
    expect(() => makePlan(c110, { tensorParallel: 5 }, tensors)).toThrow(/must divide the 12 heads: use 1 or 3 \(got 5\)/);
    await expect(placeRanks({ tensorParallel: 2.5 }, c110, sizes, never, noCalibration, env({}))).rejects.toThrow(/use 1 or 3 \(got 2\.5\)/);
  });

  it('GPU + CPU ranks split by measured speed: heads in whole super-blocks (4 heads)', async () => {
    const gpu = { id: { vendor: 'nvidia', architecture: 'gpu', device: '', description: '', isFallbackAdapter: false }, limit: 1 << 30 };
    const probe: AdapterProbe = async (spec) => ({ spec, ...gpu });
    for (const cpuMs of [1, 1.6, 2, 3, 5, 9]) {
      const calibrate = async (specs: (DeviceSpec | undefined)[]) => specs.map((s) => (describeSpec(s) === 'cpu' ? cpuMs : 1));
      const d = await placeRanks({}, c110, sizes, probe, calibrate, env({ hasGpu: true, cores: 2 }));
      expectAccepted(d);
      for (const p of offered(d)) if (p.fractions) expect(p.fractions.map((f) => Math.round(f * 12) % 4)).toEqual(p.fractions.map(() => 0));
    }
  });

  it('headsFromTimes in units: whole units, the short last unit on the last device with a share', () => {
    expect(headsFromTimes([1, 2], 12, 4)).toEqual([8, 4]);
    expect(headsFromTimes([1, 1], 12, 4)).toEqual([8, 4]);
    expect(headsFromTimes([1, 1], 6, 4)).toEqual([4, 2]);
    expect(headsFromTimes([1, 100], 12, 4)).toEqual([12, 0]);
    expect(headsFromTimes([1, 3], 8)).toEqual(headsFromTimes([1, 3], 8, 1));
  });
});
