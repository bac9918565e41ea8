import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../mulberry32.js';
import { f32ToF16 } from './gguf-blocks.js';
import { AFFINE_BLOCK, AFFINE_GROUP, AFFINE_TYPES, dequantizeAffine, splitAffineBlocks, type AffineType } from './gguf-kquants.js';
import { quantizeAny } from './gguf-kquants-write.js';

/** Random block bytes with every f16 field a finite number: any such block is a valid encoding. */
function randomBlocks(type: AffineType, blocks: number, seed: number): Uint8Array {
  const rand = mulberry32(seed);
  const { bytes } = AFFINE_BLOCK[type];
  const out = new Uint8Array(blocks * bytes);
  for (let i = 0; i < out.length; i++) out[i] = Math.floor(rand() * 256);
  const v = new DataView(out.buffer);
  const halves = type === 'Q6_K' ? [208] : type === 'Q5_0' ? [0] : [0, 2];
  for (let b = 0; b < blocks; b++) for (const at of halves) v.setUint16(b * bytes + at, f32ToF16((rand() - 0.5) * 0.02), true);
  return out;
}

function viaSplit(type: AffineType, src: Uint8Array): Float32Array {
  const { values, bytes } = AFFINE_BLOCK[type];
  const n = (src.byteLength / bytes) * values;
  const codes = new Uint8Array(n);
  const pairs = new Float32Array((n / AFFINE_GROUP[type]) * 2);
  splitAffineBlocks(type, src, codes, pairs);
  const g = AFFINE_GROUP[type];
  return Float32Array.from(codes, (c, e) => Math.fround(c * pairs[2 * Math.floor(e / g)]! + pairs[2 * Math.floor(e / g) + 1]!));
}

/** The first value whose bits differ (±0 count as one value: a − a is +0 where ggml's (q − 32)·d may be −0), or −1. */
function firstDiff(want: Float32Array, got: Float32Array): number {
  return [...want].findIndex((w, e) => !Object.is(w, got[e]) && !(w === 0 && got[e] === 0));
}

function block(type: AffineType, fill: (b: Uint8Array, v: DataView) => void): Uint8Array {
  const b = new Uint8Array(AFFINE_BLOCK[type].bytes);
  fill(b, new DataView(b.buffer));
  return b;
}

function dq(type: AffineType, b: Uint8Array): Float32Array {
  const out = new Float32Array(AFFINE_BLOCK[type].values);
  dequantizeAffine(type, b, out);
  return out;
}

describe('GGUF K-quants and Q4_1 / Q5_0 / Q5_1: the oracle (ggml\'s dequantize_row_*)', () => {
  it('reads hand-made blocks as ggml does', () => {
    // Q4_1: d 0.5, m -1; byte 0x53: value 0 = 3·0.5 − 1, value 16 = 5·0.5 − 1
    let y = dq('Q4_1', block('Q4_1', (b, v) => { v.setUint16(0, 0x3800, true); v.setUint16(2, 0xbc00, true); b[4] = 0x53; }));
    expect([y[0], y[16], y[1]]).toEqual([0.5, 1.5, -1]);
    // Q5_0: d 2; qh bits 0 and 16 set; byte 0x21: (1|16 − 16)·2, (2|16 − 16)·2; value 1: (0 − 16)·2
    y = dq('Q5_0', block('Q5_0', (b, v) => { v.setUint16(0, 0x4000, true); v.setUint32(2, 0x00010001, true); b[6] = 0x21; }));
    expect([y[0], y[16], y[1]]).toEqual([2, 4, -32]);
    // Q5_1: d 1, m 0.25, qh bit 0: (15|16)·1 + 0.25
    y = dq('Q5_1', block('Q5_1', (b, v) => { v.setUint16(0, 0x3c00, true); v.setUint16(2, 0x3400, true); v.setUint32(4, 1, true); b[8] = 0x0f; }));
    expect([y[0], y[1]]).toEqual([31.25, 0.25]);
    // Q4_K: d 1, dmin 2; sub-block 0 (sc 3, m 1): 3·2 − 2; sub-block 1 (sc 1, m 0): 1·7;
    // sub-block 4 (sc (5 | 1<<4) = 21, m (2 | 0<<4) = 2, from bytes 8, 0, 4): 21·1 − 2·2
    y = dq('Q4_K', block('Q4_K', (b, v) => {
      v.setUint16(0, 0x3c00, true); v.setUint16(2, 0x4000, true);
      b[4] = 3 | (1 << 6); b[5] = 1; b[8] = 1; b[9] = 0; b[12] = 0x25;
      b[16] = 0x72; b[16 + 64] = 0x01;
    }));
    expect([y[0], y[32], y[128]]).toEqual([4, 7, 17]);
    // Q5_K: d 1, dmin 0, sub-block 0's scale 1; qh[0] bit 0 adds 16 to value 0's nibble 3
    y = dq('Q5_K', block('Q5_K', (b, v) => { v.setUint16(0, 0x3c00, true); b[4] = 1; b[16] = 1; b[48] = 0x03; }));
    expect([y[0], y[1]]).toEqual([19, 0]);
    // Q6_K: d 0.5, scales[0] 2, scales[2] −1; value 0 = (5 | 2<<4) − 32 = 5 → 0.5·2·5; value 32 = (0 − 32)·0.5·−1
    y = dq('Q6_K', block('Q6_K', (b, v) => { v.setUint16(208, 0x3800, true); v.setInt8(192, 2); v.setInt8(194, -1); b[0] = 0x05; b[128] = 0b10; }));
    expect([y[0], y[32]]).toEqual([5, 16]);
  });

  it('the kernels\' form (codes, scale and min per group) gives the oracle\'s every bit, on random blocks', () => {
    for (const [i, type] of AFFINE_TYPES.entries()) {
      const src = randomBlocks(type, 12, 100 + i);
      const want = new Float32Array((src.byteLength / AFFINE_BLOCK[type].bytes) * AFFINE_BLOCK[type].values);
      dequantizeAffine(type, src, want);
      const got = viaSplit(type, src);
      const diff = firstDiff(want, got);
      expect(diff, `${type} value ${diff}`).toBe(-1);
      expect(want.some((w) => w !== 0)).toBe(true);
    }
  });

  it('the writer\'s quantiser writes valid blocks that hold their values to within a step', () => {
    const rand = mulberry32(9);
    const x = Float32Array.from({ length: 1024 }, () => (rand() - 0.5) * 0.2);
    for (const type of AFFINE_TYPES) {
      const bytes = quantizeAny(type, x);
      expect(bytes.byteLength).toBe((1024 / AFFINE_BLOCK[type].values) * AFFINE_BLOCK[type].bytes);
      const y = new Float32Array(1024);
      dequantizeAffine(type, bytes, y);
      const bits = type === 'Q4_1' || type === 'Q4_K' ? 4 : type === 'Q6_K' ? 6 : 5;
      const worst = Math.max(...x.map((v, i) => Math.abs(v - y[i]!)));
      // a step is the range over 2^bits − 1 levels; the K-quants' 6-bit scales add a little
      expect(worst, type).toBeLessThan((0.2 / (2 ** bits - 1)) * 1.5);
      expect(firstDiff(y, viaSplit(type, bytes)), type).toBe(-1);
    }
  });
});
