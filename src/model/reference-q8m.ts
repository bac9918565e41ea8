/**
 * The oracle of q8_m matmuls with int8 activations (GGUF's Q4_1, Q5_x and K-quants on CPU ranks,
 * src/cpu/kquant.wat): per group of 32 activations with scale xs, ((f32)Σ code·xq · scale +
 * (f32)Σ xq · min) · xs, summed in order; a group of 16 weights adds its halves' two terms in
 * order instead. Every step is rounded to f32. Q8_0 and Q4_0 parts fused beside q8_m ones take
 * the same exact q8_m form as on the ranks (workers/q8m-views.ts).
 */
import type { Q8Tensor } from './reference-q8.js';
import { q4Nibble, type Q4Tensor } from './reference-q4.js';

const f = Math.fround;

/** Byte codes and (scale, min) pairs per groupSize values (32 or 16): value = code·scale + min. */
export interface Q8mTensor {
  q: Uint8Array;
  s: Float32Array;
  groupSize: number;
}

/** A GGUF Q8_0 (int8) or Q4_0 (nibbles) tensor of n values as q8_m: codes q + 128 or the nibble, min −128·s or −8·s. */
export function q8mOf(t: { kind: 'q8_0'; t: Q8Tensor } | { kind: 'q4_0'; t: Q4Tensor }, n: number): Q8mTensor {
  const bias = t.kind === 'q8_0' ? 128 : 8;
  const q = new Uint8Array(n);
  if (t.kind === 'q8_0') for (let e = 0; e < n; e++) q[e] = t.t.q[e]! + 128;
  else for (let e = 0; e < n; e++) q[e] = q4Nibble(t.t.q, e);
  const s = new Float32Array(t.t.s.length * 2);
  t.t.s.forEach((v, g) => {
    s[2 * g] = v;
    s[2 * g + 1] = f(-bias * v);
  });
  return { q, s, groupSize: 32 };
}

/** y (d) = W (d, n) · x, x quantised per group of 32 (reference-q8.ts `quantizeQ8`). */
export function matmulQ8mA8(y: Float32Array, x: Q8Tensor, w: Q8mTensor, n: number, d: number): void {
  for (let i = 0; i < d; i++) {
    // scale·Σ code·xq and min·Σ xq over values [from, from + len) of row i
    const terms = (from: number, len: number): [number, number] => {
      let isum = 0;
      let xsum = 0;
      for (let e = from; e < from + len; e++) {
        isum += w.q[i * n + e]! * x.q[e]!;
        xsum += x.q[e]!;
      }
      const g = Math.floor((i * n + from) / w.groupSize);
      return [f(isum * w.s[2 * g]!), f(xsum * w.s[2 * g + 1]!)];
    };
    let acc = 0;
    for (let j = 0; j < n; j += 32) {
      let t: number;
      if (w.groupSize === 32) {
        const [a, b] = terms(j, 32);
        t = f(a + b);
      } else {
        const [a, b] = terms(j, 16);
        const [c, e] = terms(j + 16, 16);
        t = f(f(f(a + b) + c) + e);
      }
      acc = f(acc + f(t * x.s[j / 32]!));
    }
    y[i] = acc;
  }
}
