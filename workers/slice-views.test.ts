import { describe, expect, it } from 'vitest';
import { dequantizeQ4, quantizeQ4 } from '../src/model/reference-q4.js';
import { dequantizeQ8, quantizeQ8 } from '../src/model/reference-q8.js';
import { dequantize, quantize } from '../src/model/formats/gguf-blocks.js';
import { ModelFormatError } from '../src/errors.js';
import type { RankPlan } from '../src/parallel/plan.js';
import { commonForm, shardViews, type SliceView } from './slice-views.js';

const rand = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed) * 0.7);

describe('commonForm: the parts of one fused matrix in one dtype, exactly', () => {
  const q4 = quantizeQ4(rand(64, 1));
  const q8 = quantizeQ8(rand(64, 2), 64, 32);
  const a: SliceView = { dtype: 'q4_0', q: q4.q, s: q4.s, groupSize: 32 };
  const b: SliceView = { dtype: 'q8_0', q: q8.q, s: q8.s, groupSize: 32 };
  const f: SliceView = { dtype: 'f32', f: rand(64, 3) };

  it('leaves parts that agree as they are', () => {
    expect(commonForm([a, a])).toEqual([a, a]);
    expect(commonForm([f, f])[0]).toBe(f);
  });

  it('Q4_0 with Q8_0 in groups of 32: Q8_0 with the same values', () => {
    const [x, y] = commonForm([a, b]);
    expect(x!.dtype).toBe('q8_0');
    expect(y).toBe(b);
    if (x!.dtype !== 'q8_0') throw new Error('unreachable');
    expect(Array.from(dequantizeQ8(x!, 64, 32))).toEqual(Array.from(dequantizeQ4(q4, 64)));
  });

  it('any part f32 (or Q8_0 groups other than 32): f32 with the dequantised values', () => {
    const [x, y, z] = commonForm([a, f, b]);
    expect([x!.dtype, y!.dtype, z!.dtype]).toEqual(['f32', 'f32', 'f32']);
    if (x!.dtype !== 'f32' || z!.dtype !== 'f32') throw new Error('unreachable');
    expect(Array.from(x!.f)).toEqual(Array.from(dequantizeQ4(q4, 64)));
    expect(Array.from(z!.f)).toEqual(Array.from(dequantizeQ8(q8, 64, 32)));
    const q8g4 = quantizeQ8(rand(64, 4), 64, 4);
    expect(commonForm([a, { dtype: 'q8_0', q: q8g4.q, s: q8g4.s, groupSize: 4 }]).map((p) => p.dtype)).toEqual(['f32', 'f32']);
  });

  it('f16 parts stay f16 together; with any other dtype they widen to f32 exactly', () => {
    const bytes = quantize('F16', rand(64, 5));
    const h: SliceView = { dtype: 'f16', h: new Uint16Array(bytes.buffer) };
    expect(commonForm([h, h])).toEqual([h, h]);
    const [x, y] = commonForm([h, b]);
    expect([x!.dtype, y!.dtype]).toEqual(['f32', 'f32']);
    if (x!.dtype !== 'f32') throw new Error('unreachable');
    const want = new Float32Array(64);
    dequantize('F16', bytes, want);
    expect(Array.from(x!.f)).toEqual(Array.from(want));
  });
});

describe('shardViews: a rank\'s slices by name, with errors that name the rank', () => {
  // a norm of 4 floats, then a 1 × 32 Q8_0 row (32 int8 values, one scale)
  const r: RankPlan = {
    rank: 1, heads: [0, 1], kvHeads: [0, 1], hidden: [0, 1], vocab: [0, 1], byteLength: 16 + 36,
    slices: [
      { name: 'norm', style: 'replicated', dtype: 'f32', shape: [1, 4], byteLength: 16, ranges: [] },
      { name: 'output', style: 'vocab', dtype: 'q8_0', groupSize: 32, shape: [1, 32], byteLength: 36, ranges: [] },
    ],
  };
  const packed = new ArrayBuffer(r.byteLength);
  new Float32Array(packed, 0, 4).set([1, 2, 3, 4]);
  const { view, f32 } = shardViews(r, packed);

  it('gives each slice\'s view, and the f32 ones as floats', () => {
    expect(Array.from(f32('norm'))).toEqual([1, 2, 3, 4]);
    expect(view('output')).toMatchObject({ dtype: 'q8_0', groupSize: 32 });
  });

  it('a missing slice, or f32 asked of a quantised one, is a ModelFormatError naming the rank', () => {
    expect(() => view('layers.0.ffn_norm')).toThrow(ModelFormatError);
    expect(() => view('layers.0.ffn_norm')).toThrow(/rank 1: tensor layers\.0\.ffn_norm is missing from its shard/);
    expect(() => f32('output')).toThrow(/rank 1: tensor output must be f32, got q8_0/);
  });
});
