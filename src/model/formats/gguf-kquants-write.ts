/**
 * Writes GGML's Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K blocks by ggml's reference quantisation
 * (`quantize_row_*_ref` in ggml-quants.c, with `make_qkx2_quants` / `make_qx_quants`): what
 * `llama-quantize` writes without an importance matrix. Every step is f32 arithmetic in the C
 * expression's order, each product and sum rounded on its own (no fused multiply-add), so the
 * bytes equal those of the C built with `-ffp-contract=off`. The layouts are gguf-kquants.ts's.
 */
import { f32ToF16, quantize, type GgmlType } from './gguf-blocks.js';
import { AFFINE_BLOCK, isAffineType, scaleMinK4, type AffineType } from './gguf-kquants.js';
import { f16ToF32 } from './safetensors.js';

const f = Math.fround;
const GROUP_MAX_EPS = f(1e-15);
const TENTH = f(0.1);
/** The f32 value the file's f16 holds. */
const asHalf = (x: number) => f16ToF32(f32ToF16(x));

/** ggml's nearest_int: rounds an f32 to the nearest integer, halves to even (the add of 1.5·2^23). */
function nearestInt(x: number): number {
  return f(x + 12582912) - 12582912;
}

const clamp = (x: number, lo: number, hi: number) => (x < lo ? lo : x > hi ? hi : x);

/**
 * make_qkx2_quants: codes 0..nmax in `L` for x = scale·L − theMin, searching `nstep + 1` scales
 * around nmax / (max − min) for the least weighted squared error. Returns [scale, theMin].
 */
export function makeQkx2(x: Float32Array, w: Float32Array, L: Uint8Array, Laux: Uint8Array, nmax: number, rmin: number, nstep: number): [number, number] {
  const n = x.length;
  let min = x[0]!;
  let max = x[0]!;
  let sumW = w[0]!;
  let sumX = f(sumW * x[0]!);
  for (let i = 1; i < n; i++) {
    if (x[i]! < min) min = x[i]!;
    if (x[i]! > max) max = x[i]!;
    sumW = f(sumW + w[i]!);
    sumX = f(sumX + f(w[i]! * x[i]!));
  }
  if (min > 0) min = 0;
  if (max === min) {
    L.fill(0);
    return [0, -min];
  }
  let iscale = f(nmax / f(max - min));
  let scale = f(1 / iscale);
  let bestError = 0;
  for (let i = 0; i < n; i++) {
    L[i] = clamp(nearestInt(f(iscale * f(x[i]! - min))), 0, nmax);
    const diff = f(f(f(scale * L[i]!) + min) - x[i]!);
    bestError = f(bestError + f(w[i]! * f(diff * diff)));
  }
  for (let is = 0; is <= nstep; is++) {
    // min is the best fit's so far, as in the C
    iscale = f(f(f(rmin + f(TENTH * is)) + nmax) / f(max - min));
    let sumL = 0;
    let sumL2 = 0;
    let sumXL = 0;
    for (let i = 0; i < n; i++) {
      const l = clamp(nearestInt(f(iscale * f(x[i]! - min))), 0, nmax);
      Laux[i] = l;
      const wl = f(w[i]! * l);
      sumL = f(sumL + wl);
      sumL2 = f(sumL2 + f(wl * l));
      sumXL = f(sumXL + f(wl * x[i]!));
    }
    const D = f(f(sumW * sumL2) - f(sumL * sumL));
    if (!(D > 0)) continue;
    let thisScale = f(f(f(sumW * sumXL) - f(sumX * sumL)) / D);
    let thisMin = f(f(f(sumL2 * sumX) - f(sumL * sumXL)) / D);
    if (thisMin > 0) {
      thisMin = 0;
      thisScale = f(sumXL / sumL2);
    }
    let curError = 0;
    for (let i = 0; i < n; i++) {
      const diff = f(f(f(thisScale * Laux[i]!) + thisMin) - x[i]!);
      curError = f(curError + f(w[i]! * f(diff * diff)));
    }
    if (curError < bestError) {
      L.set(Laux);
      bestError = curError;
      scale = thisScale;
      min = thisMin;
    }
  }
  return [scale, -min];
}

/**
 * make_qx_quants with rmse_type 1 and no weights (Q6_K's call): signed codes −nmax..nmax−1,
 * stored as L = code + nmax, with the scale of 19 tries that best fits x weighted by x².
 */
function makeQx(x: Float32Array, L: Int8Array, nmax: number): number {
  const n = x.length;
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[i]!);
    if (ax > amax) {
      amax = ax;
      max = x[i]!;
    }
  }
  if (amax < GROUP_MAX_EPS) {
    L.fill(0);
    return 0;
  }
  /** Σ w·x·l and Σ w·l² at `iscale`, the codes into `L` when `keep`. */
  const fit = (iscale: number, keep: boolean): [number, number] => {
    let sumlx = 0;
    let suml2 = 0;
    for (let i = 0; i < n; i++) {
      const l = clamp(nearestInt(f(iscale * x[i]!)), -nmax, nmax - 1);
      if (keep) L[i] = l + nmax;
      const w = f(x[i]! * x[i]!);
      sumlx = f(sumlx + f(f(w * x[i]!) * l));
      suml2 = f(suml2 + f(f(w * l) * l));
    }
    return [sumlx, suml2];
  };
  let [sumlx, suml2] = fit(f(-nmax / max), true);
  let scale = suml2 ? f(sumlx / suml2) : 0;
  let best = f(scale * sumlx);
  for (let is = -9; is <= 9; is++) {
    if (is === 0) continue;
    const iscale = f(f(-f(nmax + f(TENTH * is))) / max);
    [sumlx, suml2] = fit(iscale, false);
    if (suml2 > 0 && f(sumlx * sumlx) > f(best * suml2)) {
      fit(iscale, true);
      scale = f(sumlx / suml2);
      best = f(scale * sumlx);
    }
  }
  return scale;
}

/** quantize_row_q4_K_ref / quantize_row_q5_K_ref: 8 sub-blocks of 32, 6-bit scales and mins. */
function quantizeK45(type: 'Q4_K' | 'Q5_K', x: Float32Array, out: Uint8Array, v: DataView): void {
  const { bytes } = AFFINE_BLOCK[type];
  const nmax = type === 'Q4_K' ? 15 : 31;
  const rmin = type === 'Q4_K' ? -1 : -0.5;
  const nstep = type === 'Q4_K' ? 20 : 15;
  const L = new Uint8Array(256);
  const Laux = new Uint8Array(32);
  const weights = new Float32Array(32);
  const scales = new Float32Array(8);
  const mins = new Float32Array(8);
  for (let b = 0; b < x.length / 256; b++) {
    const o = b * bytes;
    const xb = x.subarray(b * 256, b * 256 + 256);
    let maxScale = 0;
    let maxMin = 0;
    for (let j = 0; j < 8; j++) {
      const xs = xb.subarray(32 * j, 32 * j + 32);
      let sumX2 = 0;
      for (let l = 0; l < 32; l++) sumX2 = f(sumX2 + f(xs[l]! * xs[l]!));
      const avX = f(Math.sqrt(f(sumX2 / 32)));
      for (let l = 0; l < 32; l++) weights[l] = f(avX + Math.abs(xs[l]!));
      [scales[j], mins[j]] = makeQkx2(xs, weights, L.subarray(32 * j, 32 * j + 32), Laux, nmax, rmin, nstep);
      if (scales[j]! > maxScale) maxScale = scales[j]!;
      if (mins[j]! > maxMin) maxMin = mins[j]!;
    }
    const invScale = maxScale > 0 ? f(63 / maxScale) : 0;
    const invMin = maxMin > 0 ? f(63 / maxMin) : 0;
    const sc = o + 4;
    for (let j = 0; j < 8; j++) {
      // uint8_t ls = nearest_int(...): the C keeps the low byte before MIN(63, ls)
      const ls = Math.min(63, nearestInt(f(invScale * scales[j]!)) & 255);
      const lm = Math.min(63, nearestInt(f(invMin * mins[j]!)) & 255);
      if (j < 4) {
        out[sc + j] = ls;
        out[sc + j + 4] = lm;
      } else {
        out[sc + j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
        out[sc + j - 4]! |= (ls >> 4) << 6;
        out[sc + j]! |= (lm >> 4) << 6;
      }
    }
    v.setUint16(o, f32ToF16(f(maxScale / 63)), true);
    v.setUint16(o + 2, f32ToF16(f(maxMin / 63)), true);
    const d0 = asHalf(f(maxScale / 63));
    const m0 = asHalf(f(maxMin / 63));
    for (let j = 0; j < 8; j++) {
      const [s, m] = scaleMinK4(out, sc, j);
      const d = f(d0 * s);
      if (!d) continue; // the sub-block keeps make_qkx2_quants' codes
      const dm = f(m0 * m);
      for (let i = 0; i < 32; i++) L[32 * j + i] = clamp(nearestInt(f(f(xb[32 * j + i]! + dm) / d)), 0, nmax);
    }
    if (type === 'Q4_K') {
      for (let j = 0; j < 256; j += 64) for (let l = 0; l < 32; l++) out[o + 16 + j / 2 + l] = L[j + l]! | (L[j + l + 32]! << 4);
    } else {
      // qh[l] bit s: the 5th bit of sub-block s's value l; then the low nibbles as Q4_K's
      for (let j = 0; j < 256; j += 64) {
        const s = j / 32;
        for (let l = 0; l < 32; l++) {
          const l1 = L[j + l]!;
          const l2 = L[j + l + 32]!;
          out[o + 16 + l]! |= ((l1 >> 4) << s) | ((l2 >> 4) << (s + 1));
          out[o + 48 + j / 2 + l] = (l1 & 0xf) | ((l2 & 0xf) << 4);
        }
      }
    }
  }
}

/** quantize_row_q6_K_ref: 16 sub-blocks of 16, signed 6-bit codes, int8 scales under one f16 d. */
function quantizeQ6K(x: Float32Array, out: Uint8Array, v: DataView): void {
  const L = new Int8Array(256);
  const scales = new Float32Array(16);
  for (let b = 0; b < x.length / 256; b++) {
    const o = b * 210;
    const xb = x.subarray(b * 256, b * 256 + 256);
    let maxScale = 0;
    let maxAbsScale = 0;
    for (let ib = 0; ib < 16; ib++) {
      scales[ib] = makeQx(xb.subarray(16 * ib, 16 * ib + 16), L.subarray(16 * ib, 16 * ib + 16), 32);
      const abs = Math.abs(scales[ib]!);
      if (abs > maxAbsScale) {
        maxAbsScale = abs;
        maxScale = scales[ib]!;
      }
    }
    if (maxAbsScale < GROUP_MAX_EPS) continue; // the block stays all zero bytes (d = 0)
    const iscale = f(-128 / maxScale);
    v.setUint16(o + 208, f32ToF16(f(1 / iscale)), true);
    const d0 = asHalf(f(1 / iscale));
    for (let ib = 0; ib < 16; ib++) v.setInt8(o + 192 + ib, Math.min(127, nearestInt(f(iscale * scales[ib]!))));
    for (let j = 0; j < 16; j++) {
      const d = f(d0 * v.getInt8(o + 192 + j));
      if (!d) continue; // the sub-block keeps make_qx_quants' codes
      for (let i = 0; i < 16; i++) L[16 * j + i] = clamp(nearestInt(f(xb[16 * j + i]! / d)), -32, 31) + 32;
    }
    for (let j = 0; j < 256; j += 128) {
      const ql = o + j / 2;
      const qh = o + 128 + j / 4;
      for (let l = 0; l < 32; l++) {
        const [q1, q2, q3, q4] = [L[j + l]!, L[j + l + 32]!, L[j + l + 64]!, L[j + l + 96]!];
        out[ql + l] = (q1 & 0xf) | ((q3 & 0xf) << 4);
        out[ql + l + 32] = (q2 & 0xf) | ((q4 & 0xf) << 4);
        out[qh + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
      }
    }
  }
}

/** quantize_row_q4_1_ref, q5_0_ref, q5_1_ref: blocks of 32, values j and j + 16 sharing a byte. */
function quantizeSmall(type: 'Q4_1' | 'Q5_0' | 'Q5_1', x: Float32Array, out: Uint8Array, v: DataView): void {
  const { bytes } = AFFINE_BLOCK[type];
  const codes = new Uint8Array(32);
  for (let b = 0; b < x.length / 32; b++) {
    const o = b * bytes;
    const xb = x.subarray(b * 32, b * 32 + 32);
    if (type === 'Q5_0') {
      let amax = 0;
      let max = 0;
      for (const val of xb) {
        if (amax < Math.abs(val)) {
          amax = Math.abs(val);
          max = val;
        }
      }
      const d = f(max / -16);
      const id = d ? f(1 / d) : 0;
      v.setUint16(o, f32ToF16(d), true);
      for (let j = 0; j < 32; j++) codes[j] = Math.min(31, Math.trunc(f(f(xb[j]! * id) + 16.5)));
    } else {
      let min = f(3.4028234663852886e38);
      let max = -min;
      for (const val of xb) {
        if (val < min) min = val;
        if (val > max) max = val;
      }
      const d = f(f(max - min) / (type === 'Q4_1' ? 15 : 31));
      const id = d ? f(1 / d) : 0;
      v.setUint16(o, f32ToF16(d), true);
      v.setUint16(o + 2, f32ToF16(min), true);
      for (let j = 0; j < 32; j++) {
        const c = Math.trunc(f(f(f(xb[j]! - min) * id) + 0.5));
        codes[j] = type === 'Q4_1' ? Math.min(15, c) : c & 255; // q5_1_ref has no MIN(31, ...)
      }
    }
    const qs = o + (type === 'Q4_1' ? 4 : type === 'Q5_1' ? 8 : 6);
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      out[qs + j] = (codes[j]! & 0x0f) | ((codes[j + 16]! & 0x0f) << 4);
      qh |= ((codes[j]! & 0x10) >> 4) << j;
      qh |= ((codes[j + 16]! & 0x10) >> 4) << (j + 16);
    }
    if (type !== 'Q4_1') v.setUint32(o + (type === 'Q5_1' ? 4 : 2), qh >>> 0, true);
  }
}

/** `x` (whole blocks) as `type`'s blocks, by ggml's reference quantisation. */
export function quantizeAffine(type: AffineType, x: Float32Array): Uint8Array {
  const { values, bytes } = AFFINE_BLOCK[type];
  if (x.length % values !== 0) throw new RangeError(`${type} needs whole blocks of ${values} values, got ${x.length}`);
  const out = new Uint8Array((x.length / values) * bytes);
  const v = new DataView(out.buffer);
  if (type === 'Q4_K' || type === 'Q5_K') quantizeK45(type, x, out, v);
  else if (type === 'Q6_K') quantizeQ6K(x, out, v);
  else quantizeSmall(type, x, out, v);
  return out;
}

/** `x` (whole blocks) stored as any type read from GGUF: gguf-blocks.ts's rules or this module's. */
export function quantizeAny(type: GgmlType, x: Float32Array): Uint8Array {
  return isAffineType(type) ? quantizeAffine(type, x) : quantize(type, x);
}
