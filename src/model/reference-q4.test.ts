import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { loadLlama2c } from './formats/llama2c.js';
import { dequantizeQ4, q4Nibble, q4ToQ8, quantizeQ4 } from './reference-q4.js';
import { q4Layout } from '../../test-support/model/q4-layout.js';

describe('GGML Q4_0 arithmetic', () => {
  it('maps the signed value of largest magnitude to nibble 0 (d = max / -8), truncates x/d + 8.5, clips at 15', () => {
    const x = new Float32Array(32);
    x.set([-2, 1.75, 0, 2, 0.1, 0.13, -0.13, -1]);
    const t = quantizeQ4(x);
    expect(t.s[0]).toBe(0.25);
    const nib = Array.from({ length: 8 }, (_, e) => q4Nibble(t.q, e));
    // -2 → 0; 1.75 → 15; 0 → 8; 2 → 16.5 clipped to 15; 0.1 → 8.9 → 8; ±0.13 → 9 / 7; -1 → 4
    expect(nib).toEqual([0, 15, 8, 15, 8, 9, 7, 4]);
    expect(Array.from(dequantizeQ4(t, 32).subarray(0, 8))).toEqual([-2, 1.75, 0, 1.75, 0, 0.25, -0.25, -1]);
  });

  it('packs element k in the low nibble and k + 16 in the high nibble of byte k of a group', () => {
    const x = new Float32Array(64);
    x[0] = 8; // d = -1 in group 0: nibble = 8 - x
    x[16] = -3;
    x[17] = 5;
    x[32 + 15] = -4; // group 1: d = 0.5
    x[32 + 31] = 2;
    const t = quantizeQ4(x);
    expect(Array.from(t.s)).toEqual([-1, 0.5]);
    expect(t.q[0]).toBe(0 | (11 << 4));
    expect(t.q[1]).toBe(8 | (3 << 4));
    expect(t.q[16 + 15]).toBe(0 | (12 << 4));
  });

  it('an all-zero group has scale 0 and decodes to zeros; Q4 → Q8 is exact', () => {
    const x = new Float32Array(64);
    for (let i = 32; i < 64; i++) x[i] = Math.sin(i);
    const t = quantizeQ4(x);
    expect(Math.abs(t.s[0]!)).toBe(0); // GGML's d = -0 / 8
    const d = dequantizeQ4(t, 64);
    expect(Array.from(d.subarray(0, 32)).every((v) => v === 0)).toBe(true);
    const q8 = q4ToQ8(t, 64);
    for (let i = 0; i < 64; i++) expect(Math.fround(q8.q[i]! * q8.s[(i / 32) | 0]!)).toBe(d[i]);
    for (let i = 32; i < 64; i++) expect(Math.abs(d[i]! - x[i]!)).toBeLessThanOrEqual(Math.abs(t.s[1]!) + 1e-7); // half a step, a whole one where 15 clips
  });
});

describe('q4Layout (stories260K)', () => {
  const bytes = readArrayBuffer(resolve(modelsDir, 'stories260K.bin'));
  const f32 = loadLlama2c(bytes);
  const layout = q4Layout(bytes, f32.tensors, () => true);

  it('quantises every matrix whose rows are whole groups of 32 and keeps the rest (w2: 172 columns, norms) f32', () => {
    const dtypes = new Map(layout.tensors.map((t) => [t.name, t.dtype]));
    expect(dtypes.get('tok_embeddings')).toBe('q4_0');
    expect(dtypes.get('output')).toBe('q4_0');
    expect(layout.tensors.find((t) => t.name === 'output')!.aliasOf).toBe('tok_embeddings');
    for (const w of ['attention.wq', 'attention.wk', 'attention.wv', 'attention.wo', 'feed_forward.w1', 'feed_forward.w3']) expect(dtypes.get(`layers.2.${w}`)).toBe('q4_0');
    expect(dtypes.get('layers.2.feed_forward.w2')).toBe('f32');
    expect(dtypes.get('layers.2.ffn_norm')).toBe('f32');
    expect(layout.quantised.length).toBe(1 + 5 * 6);
  });

  it('stores nibbles and scales where its tensor table says, and the oracle holds their dequantised values', () => {
    const wq = layout.tensors.find((t) => t.name === 'layers.1.attention.wq')!;
    const n = 64 * 64;
    const t = { q: new Uint8Array(layout.bytes, wq.offset, n / 2), s: new Float32Array(layout.bytes, wq.quant!.scaleOffset, n / 32) };
    expect(Array.from(dequantizeQ4(t, n))).toEqual(Array.from(layout.oracle.weights.wq.subarray(n, 2 * n)));
    const src = f32.weights.wq.subarray(n, 2 * n);
    let worst = 0;
    for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(layout.oracle.weights.wq[n + i]! - src[i]!) / Math.abs(t.s[(i / 32) | 0]!));
    expect(worst).toBeLessThanOrEqual(1); // within one step of its group (clipping of the top value included)
    const w2 = layout.tensors.find((x) => x.name === 'layers.4.feed_forward.w2')!;
    expect(Array.from(new Float32Array(layout.bytes, w2.offset, 64 * 172))).toEqual(Array.from(f32.weights.w2.subarray(4 * 64 * 172)));
    expect(layout.oracle.weights.w2).toEqual(f32.weights.w2);
  });
});
