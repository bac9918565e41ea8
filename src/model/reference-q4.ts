/**
 * GGML's Q4_0 on the CPU: the quantiser (`quantize_row_q4_0_ref`'s rules) and the dequantiser
 * the kernels are checked against.
 *
 * A group is 32 consecutive values of a row, 16 bytes: byte k holds element k in its low nibble
 * and element k + 16 in its high nibble, each as q + 8 (0..15); the value is (nibble − 8) · d.
 */

export const Q4_GROUP = 32;

export interface Q4Tensor {
  /** n/2 bytes of packed nibbles. */
  q: Uint8Array;
  /** n/32 scales. */
  s: Float32Array;
}

/**
 * GGML's rules, in f32 as the C code runs them: d = max / −8 where max is the value of largest
 * magnitude in the group (its sign kept, so it maps to nibble 0), q = min(15, trunc(x / d + 8.5)).
 * GGUF then stores d as f16; this layout keeps the f32 scale.
 */
export function quantizeQ4(x: Float32Array, n = x.length, out: Q4Tensor = { q: new Uint8Array(n / 2), s: new Float32Array(n / Q4_GROUP) }): Q4Tensor {
  if (n % Q4_GROUP !== 0) throw new RangeError(`Q4_0 needs whole groups of ${Q4_GROUP} values, got ${n}`);
  const f = Math.fround;
  for (let g = 0; g < n / Q4_GROUP; g++) {
    const x0 = g * Q4_GROUP;
    let amax = 0;
    let max = 0;
    for (let j = 0; j < Q4_GROUP; j++) {
      const v = x[x0 + j]!;
      if (amax < Math.abs(v)) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const d = f(max / -8);
    const id = d ? f(1 / d) : 0;
    out.s[g] = d;
    for (let j = 0; j < Q4_GROUP / 2; j++) {
      const lo = Math.min(15, Math.trunc(f(f(x[x0 + j]! * id) + 8.5)));
      const hi = Math.min(15, Math.trunc(f(f(x[x0 + 16 + j]! * id) + 8.5)));
      out.q[g * 16 + j] = lo | (hi << 4);
    }
  }
  return out;
}

/** The nibble of element e (of a row of whole groups) in a packed plane. */
export function q4Nibble(q: Uint8Array, e: number): number {
  const g = Math.floor(e / Q4_GROUP);
  const j = e % Q4_GROUP;
  const byte = q[g * 16 + (j % 16)]!;
  return j < 16 ? byte & 15 : byte >> 4;
}

export function dequantizeQ4(t: Q4Tensor, n: number, out = new Float32Array(n)): Float32Array {
  for (let e = 0; e < n; e++) out[e] = Math.fround((q4Nibble(t.q, e) - 8) * t.s[Math.floor(e / Q4_GROUP)]!);
  return out;
}

/** The exact Q8_0 (group 32) form of a Q4_0 tensor: the same scales, int8 values nibble − 8. */
export function q4ToQ8(t: Q4Tensor, n: number): { q: Int8Array; s: Float32Array } {
  const q = new Int8Array(n);
  for (let e = 0; e < n; e++) q[e] = q4Nibble(t.q, e) - 8;
  return { q, s: t.s };
}
