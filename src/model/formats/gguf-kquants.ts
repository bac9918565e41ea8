/**
 * GGML's block types with a min or an offset: Q4_1, Q5_0, Q5_1 (blocks of 32) and the K-quants
 * Q4_K, Q5_K, Q6_K (super-blocks of 256 with 6- or 8-bit sub-block scales), as ggml-quants.c
 * stores and dequantises them (`dequantize_row_*`).
 *
 *   Q4_1  20 bytes: f16 d, f16 m, 16 bytes of nibbles (value j low, j+16 high); x = q·d + m
 *   Q5_0  22 bytes: f16 d, u32 qh (bit j: value j's 5th bit), 16 nibble bytes; x = (q − 16)·d
 *   Q5_1  24 bytes: f16 d, f16 m, u32 qh, 16 nibble bytes; x = q·d + m
 *   Q4_K  144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit (scale, min) pairs for 8 sub-blocks of
 *         32, 128 nibble bytes (each 64 values: 32 bytes, low nibbles then high); x = d·sc·q − dmin·m
 *   Q5_K  176 bytes: as Q4_K with 32 bytes qh between the scales and the nibbles (bit 2i, 2i+1:
 *         the 5th bits of sub-blocks 2i, 2i+1)
 *   Q6_K  210 bytes: 128 bytes low nibbles, 64 bytes of 2-bit highs, 16 int8 scales (one per
 *         16 values), f16 d; x = d·sc·(q − 32)
 *
 * Every one is, exactly, a code per value and an f32 (scale, min) pair per group of 32 (Q6_K:
 * 16) with x = code·scale + min: code·scale is exact in f32 (at most 24 significant bits), so
 * one rounding remains, the one ggml's expression makes. That is the kernels' form (`splitAffineBlocks`).
 */
import { f16ToF32 } from './safetensors.js';

export type AffineType = 'Q4_1' | 'Q5_0' | 'Q5_1' | 'Q4_K' | 'Q5_K' | 'Q6_K';

export const AFFINE_TYPES: readonly AffineType[] = ['Q4_1', 'Q5_0', 'Q5_1', 'Q4_K', 'Q5_K', 'Q6_K'];

/** ggml_type ids. */
export const AFFINE_TYPE_ID: Readonly<Record<AffineType, number>> = { Q4_1: 3, Q5_0: 6, Q5_1: 7, Q4_K: 12, Q5_K: 13, Q6_K: 14 };

/** Values and bytes per block (a K-quant's block is its super-block of 256). */
export const AFFINE_BLOCK: Readonly<Record<AffineType, { values: number; bytes: number }>> = {
  Q4_1: { values: 32, bytes: 20 },
  Q5_0: { values: 32, bytes: 22 },
  Q5_1: { values: 32, bytes: 24 },
  Q4_K: { values: 256, bytes: 144 },
  Q5_K: { values: 256, bytes: 176 },
  Q6_K: { values: 256, bytes: 210 },
};

/** Values per (scale, min) pair in the kernels' form. */
export const AFFINE_GROUP: Readonly<Record<AffineType, number>> = { Q4_1: 32, Q5_0: 32, Q5_1: 32, Q4_K: 32, Q5_K: 32, Q6_K: 16 };

export function isAffineType(t: string): t is AffineType {
  return (AFFINE_TYPES as readonly string[]).includes(t);
}

const f = Math.fround;

/** get_scale_min_k4: sub-block j's 6-bit scale and min from a K-quant's 12 packed bytes at `at`. */
export function scaleMinK4(b: Uint8Array, at: number, j: number): [number, number] {
  if (j < 4) return [b[at + j]! & 63, b[at + j + 4]! & 63];
  return [(b[at + j + 4]! & 0x0f) | ((b[at + j - 4]! >> 6) << 4), (b[at + j + 4]! >> 4) | ((b[at + j]! >> 6) << 4)];
}

/** Receives group g of a block: its 32 (or 16) codes through `code(i)`, its scale and min. */
type GroupSink = (g: number, scale: number, min: number, code: (i: number) => number) => void;

/** Walks one block at `o` as ggml lays it out, group by group, in value order. */
function walkBlock(type: AffineType, b: Uint8Array, v: DataView, o: number, sink: GroupSink): void {
  const half = (at: number) => f16ToF32(v.getUint16(at, true));
  if (type === 'Q4_1' || type === 'Q5_0' || type === 'Q5_1') {
    const d = half(o);
    const withMin = type !== 'Q5_0';
    const qh = type === 'Q4_1' ? 0 : v.getUint32(o + (withMin ? 4 : 2), true);
    const qs = o + (type === 'Q4_1' ? 4 : withMin ? 8 : 6);
    const high = (i: number) => (type === 'Q4_1' ? 0 : ((qh >>> i) & 1) << 4);
    const code = (i: number) => (i < 16 ? b[qs + i]! & 0x0f : b[qs + i - 16]! >> 4) | high(i);
    sink(0, d, withMin ? half(o + 2) : f(-16 * d), code);
    return;
  }
  if (type === 'Q4_K' || type === 'Q5_K') {
    const d = half(o);
    const dmin = half(o + 2);
    const qs = o + (type === 'Q4_K' ? 16 : 48);
    for (let g = 0; g < 8; g++) {
      const [sc, m] = scaleMinK4(b, o + 4, g);
      // sub-blocks 2i and 2i+1 share 32 bytes: low nibbles, then high ones
      const base = qs + (g >> 1) * 32;
      const shift = (g & 1) * 4;
      const code = (i: number) => ((b[base + i]! >> shift) & 0x0f) | (type === 'Q5_K' ? ((b[o + 16 + i]! >> g) & 1) << 4 : 0);
      sink(g, f(d * sc), -f(dmin * m), code);
    }
    return;
  }
  // Q6_K: 128-value halves; value l (0..31) of quarter q of a half takes ql's nibble and qh's bits 2q..2q+1
  const d = half(o + 208);
  for (let g = 0; g < 16; g++) {
    const sc = v.getInt8(o + 192 + g);
    const h = g >> 3; // which half
    const quarter = (g >> 1) & 3;
    const scale = f(d * sc);
    const code = (i: number) => {
      const l = (g & 1) * 16 + i;
      const lo = (b[o + h * 64 + (quarter & 1) * 32 + l]! >> ((quarter >> 1) * 4)) & 0x0f;
      return lo | (((b[o + 128 + h * 32 + l]! >> (quarter * 2)) & 3) << 4);
    };
    sink(g, scale, f(-32 * scale), code);
  }
}

/** Whole blocks of `type` as the kernels' codes (one byte per value, in value order) and (scale, min) pairs. */
export function splitAffineBlocks(type: AffineType, src: Uint8Array, codes: Uint8Array, pairs: Float32Array): void {
  const { values, bytes } = AFFINE_BLOCK[type];
  const G = AFFINE_GROUP[type];
  const per = values / G;
  const v = new DataView(src.buffer, src.byteOffset, src.byteLength);
  for (let blk = 0; blk < src.byteLength / bytes; blk++) {
    walkBlock(type, src, v, blk * bytes, (g, scale, min, code) => {
      const at = (blk * per + g);
      pairs[2 * at] = scale;
      pairs[2 * at + 1] = min;
      for (let i = 0; i < G; i++) codes[at * G + i] = code(i);
    });
  }
}

/**
 * Whole blocks of `type` as f32, line for line ggml's `dequantize_row_*` (its f32 arithmetic:
 * `d1 * q - m1`, `x*d + m`, `d * sc * q`), read straight from the block bytes.
 */
export function dequantizeAffine(type: AffineType, src: Uint8Array, out: Float32Array): void {
  const { values, bytes } = AFFINE_BLOCK[type];
  const v = new DataView(src.buffer, src.byteOffset, src.byteLength);
  const half = (at: number) => f16ToF32(v.getUint16(at, true));
  for (let blk = 0; blk < src.byteLength / bytes; blk++) {
    const o = blk * bytes;
    const y = blk * values;
    if (type === 'Q4_1') {
      const d = half(o);
      const m = half(o + 2);
      for (let j = 0; j < 16; j++) {
        out[y + j] = f((src[o + 4 + j]! & 0x0f) * d + m);
        out[y + j + 16] = f((src[o + 4 + j]! >> 4) * d + m);
      }
    } else if (type === 'Q5_0' || type === 'Q5_1') {
      const d = half(o);
      const m = type === 'Q5_1' ? half(o + 2) : 0;
      const qh = v.getUint32(o + (type === 'Q5_1' ? 4 : 2), true);
      const qs = o + (type === 'Q5_1' ? 8 : 6);
      for (let j = 0; j < 16; j++) {
        const xh0 = ((qh >>> j) << 4) & 0x10;
        const xh1 = (qh >>> (j + 12)) & 0x10;
        const x0 = (src[qs + j]! & 0x0f) | xh0;
        const x1 = (src[qs + j]! >> 4) | xh1;
        if (type === 'Q5_0') {
          out[y + j] = f((x0 - 16) * d);
          out[y + j + 16] = f((x1 - 16) * d);
        } else {
          out[y + j] = f(x0 * d + m);
          out[y + j + 16] = f(x1 * d + m);
        }
      }
    } else if (type === 'Q4_K' || type === 'Q5_K') {
      const d = half(o);
      const min = half(o + 2);
      let ql = o + (type === 'Q4_K' ? 16 : 48);
      const qh = o + 16;
      let u1 = 1;
      let u2 = 2;
      let yy = y;
      for (let j = 0, is = 0; j < 256; j += 64, is += 2) {
        const [sc1, m1q] = scaleMinK4(src, o + 4, is);
        const d1 = f(d * sc1);
        const m1 = f(min * m1q);
        const [sc2, m2q] = scaleMinK4(src, o + 4, is + 1);
        const d2 = f(d * sc2);
        const m2 = f(min * m2q);
        const hi = (l: number, u: number) => (type === 'Q5_K' && src[qh + l]! & u ? 16 : 0);
        for (let l = 0; l < 32; l++) out[yy++] = f(d1 * ((src[ql + l]! & 0x0f) + hi(l, u1)) - m1);
        for (let l = 0; l < 32; l++) out[yy++] = f(d2 * ((src[ql + l]! >> 4) + hi(l, u2)) - m2);
        ql += 32;
        u1 <<= 2;
        u2 <<= 2;
      }
    } else {
      const d = half(o + 208);
      for (let n = 0; n < 2; n++) {
        const ql = o + n * 64;
        const qh = o + 128 + n * 32;
        const sc = o + 192 + n * 8;
        const yy = y + n * 128;
        for (let l = 0; l < 32; l++) {
          const is = l >> 4;
          const q1 = ((src[ql + l]! & 0x0f) | (((src[qh + l]! >> 0) & 3) << 4)) - 32;
          const q2 = ((src[ql + l + 32]! & 0x0f) | (((src[qh + l]! >> 2) & 3) << 4)) - 32;
          const q3 = ((src[ql + l]! >> 4) | (((src[qh + l]! >> 4) & 3) << 4)) - 32;
          const q4 = ((src[ql + l + 32]! >> 4) | (((src[qh + l]! >> 6) & 3) << 4)) - 32;
          out[yy + l] = f(f(d * v.getInt8(sc + is)) * q1);
          out[yy + l + 32] = f(f(d * v.getInt8(sc + is + 2)) * q2);
          out[yy + l + 64] = f(f(d * v.getInt8(sc + is + 4)) * q3);
          out[yy + l + 96] = f(f(d * v.getInt8(sc + is + 6)) * q4);
        }
      }
    }
  }
}
