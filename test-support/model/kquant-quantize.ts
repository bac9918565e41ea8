/**
 * A quantiser for GGML's Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K blocks, for test files. Q4_1, Q5_0
 * and Q5_1 follow ggml's `quantize_row_*_ref`; the K-quants use a plain min/max fit per
 * sub-block (ggml's reference searches for better scales) packed exactly as ggml packs them.
 * Any valid encoding serves: the oracle dequantises what is stored (src/model/formats/gguf-kquants.ts).
 */
import { f32ToF16, quantize } from '../../src/model/formats/gguf-blocks.js';
import type { GgmlType } from '../../src/model/formats/gguf-blocks.js';
import { AFFINE_BLOCK, isAffineType, type AffineType } from '../../src/model/formats/gguf-kquants.js';
import { f16ToF32 } from '../../src/model/formats/safetensors.js';

const f = Math.fround;
const nearest = (x: number) => Math.round(x); // ggml's nearest_int rounds halves up as well, near enough for a test encoding
const clamp = (x: number, lo: number, hi: number) => Math.max(lo, Math.min(hi, x));
/** The f32 value the file's f16 holds. */
const asHalf = (x: number) => f16ToF32(f32ToF16(x));

function minMax(x: Float32Array, a: number, n: number): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = a; i < a + n; i++) {
    lo = Math.min(lo, x[i]!);
    hi = Math.max(hi, x[i]!);
  }
  return [lo, hi];
}

/** Q4_1 / Q5_1 (min) and Q5_0 (signed) blocks of 32, ggml's reference rules. */
function quantizeSmall(type: 'Q4_1' | 'Q5_0' | 'Q5_1', x: Float32Array, out: Uint8Array, v: DataView): void {
  const { bytes } = AFFINE_BLOCK[type];
  for (let b = 0; b < x.length / 32; b++) {
    const o = b * bytes;
    const codes = new Array<number>(32);
    if (type === 'Q5_0') {
      let amax = 0;
      let max = 0;
      for (let j = 0; j < 32; j++) {
        const val = x[b * 32 + j]!;
        if (amax < Math.abs(val)) {
          amax = Math.abs(val);
          max = val;
        }
      }
      const d = f(max / -16);
      const id = d ? f(1 / d) : 0;
      v.setUint16(o, f32ToF16(d), true);
      for (let j = 0; j < 32; j++) codes[j] = Math.min(31, Math.trunc(f(f(x[b * 32 + j]! * id) + 16.5)));
    } else {
      const [lo, hi] = minMax(x, b * 32, 32);
      const levels = type === 'Q4_1' ? 15 : 31;
      const d = f((hi - lo) / levels);
      const id = d ? f(1 / d) : 0;
      v.setUint16(o, f32ToF16(d), true);
      v.setUint16(o + 2, f32ToF16(lo), true);
      for (let j = 0; j < 32; j++) codes[j] = Math.min(levels, Math.trunc(f(f(f(x[b * 32 + j]! - lo) * id) + 0.5)));
    }
    const qs = o + (type === 'Q4_1' ? 4 : type === 'Q5_1' ? 8 : 6);
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      out[qs + j] = (codes[j]! & 0x0f) | ((codes[j + 16]! & 0x0f) << 4);
      qh |= ((codes[j]! >> 4) & 1) << j;
      qh |= ((codes[j + 16]! >> 4) & 1) << (j + 16);
    }
    if (type !== 'Q4_1') v.setUint32(o + (type === 'Q5_1' ? 4 : 2), qh >>> 0, true);
  }
}

/** Q4_K / Q5_K: 8 sub-blocks of 32 fitted by min/max, 6-bit scales and mins packed as get_scale_min_k4 reads them. */
function quantizeK45(type: 'Q4_K' | 'Q5_K', x: Float32Array, out: Uint8Array, v: DataView): void {
  const { bytes } = AFFINE_BLOCK[type];
  const levels = type === 'Q4_K' ? 15 : 31;
  for (let b = 0; b < x.length / 256; b++) {
    const o = b * bytes;
    const scales: number[] = [];
    const mins: number[] = [];
    for (let j = 0; j < 8; j++) {
      const [lo, hi] = minMax(x, b * 256 + j * 32, 32);
      const low = Math.min(0, lo);
      scales.push(f((hi - low) / levels));
      mins.push(f(-low));
    }
    const d = asHalf(Math.max(...scales) / 63);
    const dmin = asHalf(Math.max(...mins) / 63);
    v.setUint16(o, f32ToF16(d), true);
    v.setUint16(o + 2, f32ToF16(dmin), true);
    const ls = scales.map((s) => (d ? clamp(nearest(s / d), 0, 63) : 0));
    const lm = mins.map((m) => (dmin ? clamp(nearest(m / dmin), 0, 63) : 0));
    for (let j = 0; j < 8; j++) {
      if (j < 4) {
        out[o + 4 + j] = ls[j]!;
        out[o + 4 + j + 4] = lm[j]!;
      } else {
        out[o + 4 + j + 4] = (ls[j]! & 0x0f) | ((lm[j]! & 0x0f) << 4);
        out[o + 4 + j - 4] |= (ls[j]! >> 4) << 6;
        out[o + 4 + j] |= (lm[j]! >> 4) << 6;
      }
    }
    const qs = o + (type === 'Q4_K' ? 16 : 48);
    for (let j = 0; j < 8; j++) {
      const sd = f(d * ls[j]!);
      const sm = f(dmin * lm[j]!);
      for (let i = 0; i < 32; i++) {
        const q = sd ? clamp(nearest((x[b * 256 + j * 32 + i]! + sm) / sd), 0, levels) : 0;
        const at = qs + (j >> 1) * 32 + i;
        out[at] |= (q & 0x0f) << ((j & 1) * 4);
        if (type === 'Q5_K' && q > 15) out[o + 16 + i] |= 1 << j;
      }
    }
  }
}

/** Q6_K: 16 sub-blocks of 16, signed 6-bit values, int8 scales under one f16 d (ggml's packing). */
function quantizeQ6K(x: Float32Array, out: Uint8Array, v: DataView): void {
  for (let b = 0; b < x.length / 256; b++) {
    const o = b * 210;
    const scales: number[] = [];
    for (let g = 0; g < 16; g++) {
      let amax = 0;
      let max = 0;
      for (let i = 0; i < 16; i++) {
        const val = x[b * 256 + g * 16 + i]!;
        if (Math.abs(val) > amax) {
          amax = Math.abs(val);
          max = val;
        }
      }
      scales.push(f(max / -32));
    }
    let maxScale = 0;
    for (const s of scales) if (Math.abs(s) > Math.abs(maxScale)) maxScale = s;
    if (maxScale === 0) continue; // an all-zero block: d = 0, every code 32 is not needed, all values 0
    const iscale = f(-128 / maxScale);
    const d = asHalf(1 / iscale);
    v.setUint16(o + 208, f32ToF16(d), true);
    for (let g = 0; g < 16; g++) {
      const sc = clamp(nearest(iscale * scales[g]!), -128, 127);
      v.setInt8(o + 192 + g, sc);
      const s = f(d * sc);
      for (let i = 0; i < 16; i++) {
        const q = (s ? clamp(nearest(x[b * 256 + g * 16 + i]! / s), -32, 31) : 0) + 32;
        const h = g >> 3;
        const quarter = (g >> 1) & 3;
        const l = (g & 1) * 16 + i;
        out[o + h * 64 + (quarter & 1) * 32 + l] |= (q & 0x0f) << ((quarter >> 1) * 4);
        out[o + 128 + h * 32 + l] |= (q >> 4) << (quarter * 2);
      }
    }
  }
}

/** `x` (whole blocks) stored as `type`: gguf-blocks.ts's rules for F32/F16/Q8_0/Q4_0, this module's for the rest. */
export function quantizeAny(type: GgmlType, x: Float32Array): Uint8Array {
  if (!isAffineType(type)) return quantize(type, x);
  const t: AffineType = type;
  const { values, bytes } = AFFINE_BLOCK[t];
  if (x.length % values !== 0) throw new RangeError(`${t} needs whole blocks of ${values} values, got ${x.length}`);
  const out = new Uint8Array((x.length / values) * bytes);
  const v = new DataView(out.buffer);
  if (t === 'Q4_K' || t === 'Q5_K') quantizeK45(t, x, out, v);
  else if (t === 'Q6_K') quantizeQ6K(x, out, v);
  else quantizeSmall(t, x, out, v);
  return out;
}
