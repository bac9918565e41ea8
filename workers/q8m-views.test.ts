import { describe, expect, it } from 'vitest';
import { commonForm, sliceValues, type SliceView } from './slice-views.js';
import { dequantizeQ8m, regroupQ8m, toQ8m, type Q8mView } from './q8m-views.js';
import { dequantizeQ8 } from '../src/model/reference-q8.js';

const q8 = (scales: number[]): SliceView & { dtype: 'q8_0' } => ({
  dtype: 'q8_0', q: Int8Array.from({ length: 32 * scales.length }, (_, i) => ((i * 37) % 256) - 128), s: Float32Array.from(scales), groupSize: 32,
});
const q8m: Q8mView = { dtype: 'q8_m', q: Uint8Array.from({ length: 64 }, (_, i) => i % 64), s: Float32Array.from([0.5, -3, 0.25, 1, 2, -16, 0.125, 0.5]), groupSize: 16 };

describe('q8_m slice conversions', () => {
  it('a Q8_0 slice with f16 scales has an exact q8_m form; one with other f32 scales has none', () => {
    const v = q8([0.0078125, -3.5]);
    const m = toQ8m(v, 64)!;
    expect(dequantizeQ8m(m)).toEqual(dequantizeQ8(v, 64, 32));
    expect(m.q.every((c) => c >= 0 && c <= 255)).toBe(true);
    expect(toQ8m(q8([0.1, 1]), 64)).toBeUndefined();
  });

  it('regrouping repeats each pair and keeps every value', () => {
    const r = regroupQ8m(q8m, 8);
    expect(r.s.length).toBe(16);
    expect(dequantizeQ8m(r)).toEqual(dequantizeQ8m(q8m));
    expect(() => regroupQ8m(q8m, 5)).toThrow(/cannot be cut/);
  });

  it('commonForm fuses q8_m with f16-scaled Q8_0 in the groups that divide both, and falls back to f32 otherwise', () => {
    const fused = commonForm([q8m, q8([0.5, 2])]);
    expect(fused.map((p) => [p.dtype, p.dtype === 'q8_m' ? p.groupSize : 0])).toEqual([['q8_m', 16], ['q8_m', 16]]);
    expect(dequantizeQ8m(fused[1] as Q8mView)).toEqual(dequantizeQ8(q8([0.5, 2]), 64, 32));
    const f32 = commonForm([q8m, q8([0.1, 2])]);
    expect(f32.map((p) => p.dtype)).toEqual(['f32', 'f32']);
    expect(sliceValues(f32[0]!)).toBe(64);
    expect((f32[0] as { f: Float32Array }).f).toEqual(dequantizeQ8m(q8m));
  });
});
