import { test, expect } from './fixtures.js';
import { benchAllReduce } from '../src/cli/bench-allreduce.js';

// Smoke pass of `bench allreduce`: tiny sizes, few samples; checks the JSON shape, never timings.
test('bench allreduce (smoke) returns the documented JSON shape', async () => {
  const r = await benchAllReduce({ workers: [2], sizes: [64, 1000], smoke: true });
  // Both algorithms and auto out of place, and auto in place (nccl-tests' second column).
  expect(r.results).toHaveLength(2 * 4);
  expect(r.results.filter((x) => x.in_place).map((x) => [x.floats, x.algorithm])).toEqual([[64, 'auto'], [1000, 'auto']]);
  expect(r.baselines.copy_floor?.map((f) => [f.workers, f.floats, f.in_place])).toEqual([[2, 64, false], [2, 64, true], [2, 1000, false], [2, 1000, true]]);
  for (const f of r.baselines.copy_floor ?? []) expect(f.median_us > 0 && Number.isFinite(f.busbw_gbs)).toBe(true);
  for (const x of r.results) {
    expect(Object.keys(x)).toEqual(expect.arrayContaining(['workers', 'floats', 'algorithm', 'median_us', 'busbw_gbs']));
    expect(x.workers).toBe(2);
    expect(['one-shot', 'direct', 'auto']).toContain(x.algorithm);
    expect(x.median_us).toBeGreaterThan(0);
    expect(Number.isFinite(x.busbw_gbs)).toBe(true);
  }
  expect(r.baselines.memcpy_gbs).toBeGreaterThan(0);
  expect(r.baselines.postmessage.map((p) => [p.workers, p.floats])).toEqual([[2, 64], [2, 1000]]);
  expect(JSON.parse(JSON.stringify(r))).toEqual(r);
});

test('bench allreduce (smoke) without the in-place rows and the floor still gives every other row and postMessage', async () => {
  const r = await benchAllReduce({ workers: [2], sizes: [64], algorithms: ['auto'], inPlace: false, copyFloor: false, smoke: true });
  expect(r.results.map((x) => [x.algorithm, x.in_place])).toEqual([['auto', false]]);
  expect(r.baselines.copy_floor).toEqual([]);
  expect(r.baselines.postmessage.map((p) => [p.workers, p.floats])).toEqual([[2, 64]]);
});
