/**
 * sinf and cosf as glibc (2.28+, x86-64) computes them, so RoPE tables match run.c's and
 * runq.c's bit for bit. glibc's float sin/cos evaluate a polynomial in double and round once to
 * float: ~0.56 ULP, so about 1% of RoPE's inputs round the other way from the correctly rounded
 * value that `Math.sin` gives (stories260K-q8, prompt "The cat": a token parts at position 66).
 * The algorithm is Arm's optimized-routines one (MIT) that glibc ships: reduction by 2/π in
 * double below 120, by 4/π's bits in 64-bit integers above; glibc's x86-64 build selects its
 * FMA variant on FMA CPUs, where gcc contracts each `a + b·c` into an fma, so this does too.
 */

import type { Trig } from './reference.js';
import { fma } from './fma.js';

const f = Math.fround;
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Top 12 bits of |x|'s float bits: glibc's cheap range test. */
function abstop12(x: number): number {
  f32[0] = x;
  return (u32[0]! >>> 20) & 0x7ff;
}
const PIO4_TOP = abstop12(0.7853981633974483);
const TINY_TOP = abstop12(2 ** -12);
const FAST_TOP = abstop12(120);

interface Poly { hpiInv: number; hpi: number; c: readonly number[]; s: readonly number[] }
// (c0..c4, s1..s3); the second computes −cos and −sin's odd terms' signs for quadrants 2 and 3.
const C = [1, -0.49999999725108224, 0.041666623324344516, -0.001388676379437604, 2.4390450703564542e-05];
const S = [-0.16666654943701084, 0.008332178146138854, -0.00019517298981385725];
const TABLE: readonly Poly[] = [
  { hpiInv: 10680707.430881744, hpi: 1.5707963267948966, c: C, s: S },
  { hpiInv: 10680707.430881744, hpi: 1.5707963267948966, c: C.map((v) => -v), s: S },
];
const SIGN = [1, -1, -1, 1];
const PI64 = 3.4061215800865545e-19; // π · 2^-64
// 4/π to 192 bits, 8 new bits per entry.
const INV_PIO4 = [
  0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e, 0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
  0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1, 0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
  0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
].map(BigInt);

/** sin (n even) or cos (n odd) of the reduced x, x2 = x·x, rounded to float. */
function poly(x: number, x2: number, p: Poly, n: number): number {
  if ((n & 1) === 0) {
    const x3 = x * x2;
    const s1 = fma(x2, p.s[2]!, p.s[1]!);
    const x7 = x3 * x2;
    const s = fma(x3, p.s[0]!, x);
    return f(fma(x7, s1, s));
  }
  const x4 = x2 * x2;
  const c2 = fma(x2, p.c[4]!, p.c[3]!);
  const c1 = fma(x2, p.c[1]!, p.c[0]!);
  const x6 = x4 * x2;
  const c = fma(x4, p.c[2]!, c1);
  return f(fma(x6, c2, c));
}

/** x mod π/2 for |x| < 120 and its quadrant: one fma against π/2 in double. */
function reduceFast(x: number, p: Poly): { r: number; n: number } {
  const r = x * p.hpiInv;
  const n = ((Math.trunc(r) | 0) + 0x800000) >> 24;
  return { r: fma(-n, p.hpi, x), n };
}

/** |x| mod π/2 and its quadrant from the float's bits times 4/π (a 32×96-bit product). */
function reduceLarge(xi: number): { r: number; n: number } {
  const at = (xi >>> 26) & 15;
  const shift = (xi >>> 23) & 7;
  const m = BigInt((((xi & 0xffffff) | 0x800000) << shift) >>> 0);
  const mask = (1n << 64n) - 1n;
  const res0a = (m * INV_PIO4[at]!) & 0xffffffffn;
  const res1 = m * INV_PIO4[at + 4]!;
  const res2 = m * INV_PIO4[at + 8]!;
  let res0 = ((res2 >> 32n) | (res0a << 32n)) & mask;
  res0 = (res0 + res1) & mask;
  const n = ((res0 + (1n << 61n)) & mask) >> 62n;
  res0 = (res0 - (n << 62n)) & mask;
  return { r: Number(BigInt.asIntN(64, res0)) * PI64, n: Number(n) };
}

/** Shared body: `cos` shifts the quadrant by one. */
function sincos(y: number, cos: boolean): number {
  const x = f(y);
  const top = abstop12(x);
  if (top < PIO4_TOP) {
    if (top < TINY_TOP) return cos ? 1 : x;
    return poly(x, x * x, TABLE[0]!, cos ? 1 : 0);
  }
  if (!Number.isFinite(x)) return NaN;
  let r: number, n: number, q: number;
  if (top < FAST_TOP) {
    ({ r, n } = reduceFast(x, TABLE[0]!));
    q = n;
  } else {
    f32[0] = x;
    const xi = u32[0]!;
    ({ r, n } = reduceLarge(xi));
    q = n + (xi >>> 31);
  }
  const s = SIGN[q & 3]!;
  const p = TABLE[q & 2 ? 1 : 0]!;
  return poly(r * s, r * r, p, cos ? n ^ 1 : n);
}

/** glibc's sinf(y) for a float y. */
export function sinf(y: number): number {
  return sincos(y, false);
}

/** glibc's cosf(y) for a float y. */
export function cosf(y: number): number {
  return sincos(y, true);
}

/** For `ropeTables`: the tables run.c and runq.c compute (glibc's libm). */
export const glibcTrig: Trig = { sin: sinf, cos: cosf };
