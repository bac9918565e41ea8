/**
 * q8_m slices (GGUF's Q4_1, Q5_0, Q5_1 and K-quants as byte codes and (scale, min) pairs): the
 * exact conversions fusing needs. A group of g values is g/h groups of h values with the same
 * pair, so parts stored in groups of 32 (Q4_K) and 16 (Q6_K) fuse in groups of 16. A Q8_0 group
 * is codes q + 128 with min −128·s, a Q4_0 one nibbles with min −8·s: code·s is exact when s is
 * an f16 (GGUF's scales: 11 bits times 8), and so is the sum, which is q·s.
 */
import { InvalidArgumentError } from '../src/errors.js';
import { q4Nibble } from '../src/model/reference-q4.js';
import { f32ToF16 } from '../src/model/formats/gguf-blocks.js';
import { f16ToF32 } from '../src/model/formats/safetensors.js';

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

/**
 * The exact q8_m form of a Q8_0 (int8 values) or Q4_0 (nibbles, groups of 32) slice of `n`
 * values, or undefined when a scale is not an f16 (llama2.c v2's f32 scales), where it may not be.
 */
export function toQ8m(v: { dtype: 'q8_0'; q: Int8Array; s: Float32Array; groupSize: number } | { dtype: 'q4_0'; q: Uint8Array; s: Float32Array; groupSize: number }, n: number): Q8mView | undefined {
  if (!v.s.every((x) => f16ToF32(f32ToF16(x)) === x)) return undefined;
  const bias = v.dtype === 'q8_0' ? 128 : 8;
  const q = new Uint8Array(n);
  if (v.dtype === 'q8_0') for (let e = 0; e < n; e++) q[e] = v.q[e]! + 128;
  else for (let e = 0; e < n; e++) q[e] = q4Nibble(v.q, e);
  const s = new Float32Array(v.s.length * 2);
  for (let i = 0; i < v.s.length; i++) {
    s[2 * i] = v.s[i]!;
    s[2 * i + 1] = Math.fround(-bias * v.s[i]!);
  }
  return { dtype: 'q8_m', q, s, groupSize: v.groupSize };
}
