/**
 * q8_m slices (GGUF's Q4_1, Q5_0, Q5_1 and K-quants as byte codes and (scale, min) pairs): the
 * exact conversions fusing needs. A group of g values is g/h groups of h values with the same
 * pair, so parts stored in groups of 32 (Q4_K) and 16 (Q6_K) fuse in groups of 16.
 */
import { InvalidArgumentError } from '../src/errors.js';

export interface Q8mView {
  dtype: 'q8_m';
  q: Uint8Array;
  /** Two floats per group: scale, min. */
  s: Float32Array;
  groupSize: number;
}

/** The same values in groups of `g` (which must divide the group size). */
export function regroupQ8m(v: Q8mView, g: number): Q8mView {
  if (g === v.groupSize) return v;
  if (v.groupSize % g !== 0) throw new InvalidArgumentError(`q8_m groups of ${v.groupSize} cannot be cut into groups of ${g}`);
  const r = v.groupSize / g;
  const s = new Float32Array(v.s.length * r);
  for (let i = 0; i < v.s.length / 2; i++) {
    for (let j = 0; j < r; j++) {
      s[2 * (i * r + j)] = v.s[2 * i]!;
      s[2 * (i * r + j) + 1] = v.s[2 * i + 1]!;
    }
  }
  return { dtype: 'q8_m', q: v.q, s, groupSize: g };
}

/** Every value as f32: code · scale + min, one rounding, as the kernels compute it. */
export function dequantizeQ8m(v: Q8mView, out = new Float32Array(v.q.length)): Float32Array {
  for (let e = 0; e < v.q.length; e++) {
    const gi = Math.floor(e / v.groupSize);
    out[e] = Math.fround(v.q[e]! * v.s[2 * gi]! + v.s[2 * gi + 1]!);
  }
  return out;
}
