/**
 * GGML's storage of the tensor types webgpu-tp reads from GGUF, and the same rules to write them.
 *
 *   F32   4 bytes per value
 *   F16   2 bytes per value (IEEE half)
 *   Q8_0  blocks of 32 values, 34 bytes: f16 scale d, then 32 int8 q; value = q·d
 *   Q4_0  blocks of 32 values, 18 bytes: f16 scale d, then 16 bytes; byte k holds value k in its
 *         low nibble and value k+16 in its high nibble, each stored as q+8; value = (nibble−8)·d
 *
 * Blocks run along a row (ne[0]), so a row of a quantised tensor is a whole number of blocks.
 * The kernels keep planes, not blocks: `splitQ8Blocks`/`splitQ4Blocks` separate a run of blocks
 * into its values (int8, or the 16 nibble bytes as they are) and its scales widened to f32.
 * Quantisation follows ggml's reference code (`quantize_row_q8_0_ref`, `quantize_row_q4_0_ref`)
 * in f32 arithmetic, so files written here hold what llama.cpp would write.
 */
import { f16ToF32 } from './safetensors.js';
import { AFFINE_BLOCK, AFFINE_TYPE_ID, dequantizeAffine, isAffineType, type AffineType } from './gguf-kquants.js';

/** The types read; Q4_1, Q5_0, Q5_1 and the K-quants are gguf-kquants.ts's. */
export type GgmlType = 'F32' | 'F16' | 'Q8_0' | 'Q4_0' | AffineType;

/** ggml_type ids as GGUF stores them. */
export const GGML_TYPE_ID: Readonly<Record<GgmlType, number>> = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 8, ...AFFINE_TYPE_ID };

/** Values per block, and bytes per block. */
export const GGML_BLOCK: Readonly<Record<GgmlType, { values: number; bytes: number }>> = {
  F32: { values: 1, bytes: 4 },
  F16: { values: 1, bytes: 2 },
  Q8_0: { values: 32, bytes: 34 },
  Q4_0: { values: 32, bytes: 18 },
  ...AFFINE_BLOCK,
};

/** Values per quantisation block (ggml's QK8_0 and QK4_0). */
export const QK = 32;

const f = Math.fround;

/** Bytes of `n` values stored as `type` (n a whole number of blocks). */
export function ggmlBytes(type: GgmlType, n: number): number {
  const b = GGML_BLOCK[type];
  return (n / b.values) * b.bytes;
}

let halfTable: Float32Array | undefined;

/** f16 bits → f32, through a table built once (every f16 is exactly an f32). */
function half(bits: number): number {
  if (!halfTable) {
    halfTable = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) halfTable[h] = f16ToF32(h);
  }
  return halfTable[bits]!;
}

const f32Scratch = new Float32Array(1);
const bitsScratch = new Uint32Array(f32Scratch.buffer);

/** f32 → f16 bits, round to nearest even, as ggml's GGML_FP32_TO_FP16 (overflow to ±inf). */
export function f32ToF16(x: number): number {
  // One scratch word, not a buffer per call: this runs once per value of every F16 tensor written.
  f32Scratch[0] = x;
  const bits = bitsScratch[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    // subnormal half: shift the full mantissa (with its hidden bit) into place, rounding to even
    mant |= 0x800000;
    const shift = 14 - e;
    const halfway = 1 << (shift - 1);
    let h = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    if (rest > halfway || (rest === halfway && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && h & 1)) h++; // a carry into the exponent is still right
  return sign | Math.min(h, 0x7c00);
}

/** Separates whole Q8_0 blocks into int8 values `q` and f32 scales `s` (one per block). */
export function splitQ8Blocks(src: Uint8Array, q: Int8Array, s: Float32Array): void {
  const blocks = src.byteLength / 34;
  const view = new DataView(src.buffer, src.byteOffset, src.byteLength);
  const bytes = new Int8Array(src.buffer, src.byteOffset, src.byteLength);
  for (let b = 0; b < blocks; b++) {
    s[b] = half(view.getUint16(b * 34, true));
    q.set(bytes.subarray(b * 34 + 2, b * 34 + 34), b * 32);
  }
}

/** Separates whole Q4_0 blocks into their 16 nibble bytes each (GGML's order kept) and f32 scales. */
export function splitQ4Blocks(src: Uint8Array, nibbles: Uint8Array, s: Float32Array): void {
  const blocks = src.byteLength / 18;
  const view = new DataView(src.buffer, src.byteOffset, src.byteLength);
  for (let b = 0; b < blocks; b++) {
    s[b] = half(view.getUint16(b * 18, true));
    nibbles.set(src.subarray(b * 18 + 2, b * 18 + 18), b * 16);
  }
}

/** Values of whole blocks/elements of `type` as f32 (ggml's dequantize_row_*), into `out`. */
export function dequantize(type: GgmlType, src: Uint8Array, out: Float32Array): void {
  if (isAffineType(type)) return dequantizeAffine(type, src, out);
  const view = new DataView(src.buffer, src.byteOffset, src.byteLength);
  if (type === 'F32') {
    for (let i = 0; i < src.byteLength / 4; i++) out[i] = view.getFloat32(i * 4, true);
  } else if (type === 'F16') {
    for (let i = 0; i < src.byteLength / 2; i++) out[i] = half(view.getUint16(i * 2, true));
  } else if (type === 'Q8_0') {
    for (let b = 0; b < src.byteLength / 34; b++) {
      const d = half(view.getUint16(b * 34, true));
      for (let j = 0; j < 32; j++) out[b * 32 + j] = f(view.getInt8(b * 34 + 2 + j) * d);
    }
  } else {
    for (let b = 0; b < src.byteLength / 18; b++) {
      const d = half(view.getUint16(b * 18, true));
      for (let j = 0; j < 16; j++) {
        const byte = src[b * 18 + 2 + j]!;
        out[b * 32 + j] = f(((byte & 0x0f) - 8) * d);
        out[b * 32 + j + 16] = f(((byte >> 4) - 8) * d);
      }
    }
  }
}

/** C's roundf: halves away from zero. */
function roundAway(v: number): number {
  return Math.sign(v) * Math.floor(Math.abs(v) + 0.5);
}

/**
 * `x` (a whole number of blocks for the quantised types) stored as `type`, by ggml's reference
 * rules: Q8_0 d = amax/127, q = roundf(x·(1/d)); Q4_0 d = max/−8 with max the value of largest
 * magnitude (its sign kept), nibble = min(15, trunc(x·(1/d) + 8.5)). The f32 d is used to
 * quantise; the file holds d rounded to f16, as ggml does.
 */
export function quantize(type: GgmlType, x: Float32Array): Uint8Array {
  if (isAffineType(type)) throw new RangeError(`${type} is not written here (gguf-kquants-write.ts writes it)`);
  const out = new Uint8Array(ggmlBytes(type, x.length));
  const view = new DataView(out.buffer);
  if (type === 'F32') {
    for (let i = 0; i < x.length; i++) view.setFloat32(i * 4, x[i]!, true);
  } else if (type === 'F16') {
    for (let i = 0; i < x.length; i++) view.setUint16(i * 2, f32ToF16(x[i]!), true);
  } else if (type === 'Q8_0') {
    for (let b = 0; b < x.length / 32; b++) {
      let amax = 0;
      for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j]!));
      const d = f(amax / 127);
      const id = d ? f(1 / d) : 0;
      view.setUint16(b * 34, f32ToF16(d), true);
      for (let j = 0; j < 32; j++) view.setInt8(b * 34 + 2 + j, roundAway(f(x[b * 32 + j]! * id)));
    }
  } else {
    for (let b = 0; b < x.length / 32; b++) {
      let amax = 0;
      let max = 0;
      for (let j = 0; j < 32; j++) {
        const v = x[b * 32 + j]!;
        if (amax < Math.abs(v)) {
          amax = Math.abs(v);
          max = v;
        }
      }
      const d = f(max / -8);
      const id = d ? f(1 / d) : 0;
      view.setUint16(b * 18, f32ToF16(d), true);
      for (let j = 0; j < 16; j++) {
        const lo = Math.min(15, Math.trunc(f(f(x[b * 32 + j]! * id) + 8.5)));
        const hi = Math.min(15, Math.trunc(f(f(x[b * 32 + 16 + j]! * id) + 8.5)));
        out[b * 18 + 2 + j] = lo | (hi << 4);
      }
    }
  }
  return out;
}
