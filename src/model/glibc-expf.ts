/**
 * expf as glibc (2.28+, x86-64, FMA CPUs) computes it: exp(x) = 2^(k/32) · 2^(r/32), the second
 * factor a cubic in double, rounded once to float. ~0.502 ULP, so it rounds the other way from
 * the correctly rounded value on ~0.07% of runq.c's softmax and SiLU inputs. Arm's
 * optimized-routines algorithm (MIT), which glibc ships; its FMA build contracts each `a + b·c`.
 */
import { fma } from './fma.js';

const f = Math.fround;
const INV_LN2_N = 46.16624130844683; // N / ln 2, N = 32 table entries
const SHIFT = 6755399441055744; // 1.5 · 2^52: adding it rounds to an integer
// The cubic for 2^(r/N) − 1 = r·(C2 + r·(C1 + r·C0)): its coefficients over N, N², N³.
const C0 = 1.6938359250920212e-06;
const C1 = 0.00023459809789509004;
const C2 = 0.021660849396613134;
// The bits of 2^(i/32) (correctly rounded doubles) minus i << 47, so adding k << 47 scales by 2^(k/32).
const T = [
  '3ff0000000000000', '3fefd9b0d3158574', '3fefb5586cf9890f', '3fef9301d0125b51', '3fef72b83c7d517b', '3fef54873168b9aa', '3fef387a6e756238', '3fef1e9df51fdee1',
  '3fef06fe0a31b715', '3feef1a7373aa9cb', '3feedea64c123422', '3feece086061892d', '3feebfdad5362a27', '3feeb42b569d4f82', '3feeab07dd485429', '3feea47eb03a5585',
  '3feea09e667f3bcd', '3fee9f75e8ec5f74', '3feea11473eb0187', '3feea589994cce13', '3feeace5422aa0db', '3feeb737b0cdc5e5', '3feec49182a3f090', '3feed503b23e255d',
  '3feee89f995ad3ad', '3feeff76f2fb5e47', '3fef199bdd85529c', '3fef3720dcef9069', '3fef5818dcfba487', '3fef7c97337b9b5f', '3fefa4afa2a490da', '3fefd0765b6e4540',
].map((h) => BigInt(`0x${h}`));
const OVERFLOW = 88.72283172607422; // largest float x with exp(x) < 2^128
const UNDERFLOW = -103.97207641601562; // below it exp(x) < 2^-150 rounds to 0

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

/** glibc's expf(x) for a float x. */
export function expf(x: number): number {
  const xd = f(x);
  if (Number.isNaN(xd)) return xd;
  if (xd > OVERFLOW) return Infinity;
  if (xd < UNDERFLOW) return 0;
  const z = INV_LN2_N * xd;
  const kdShifted = z + SHIFT;
  f64[0] = kdShifted;
  const ki = u64[0]!;
  const kd = kdShifted - SHIFT;
  const r = z - kd;
  u64[0] = (T[Number(ki % 32n)]! + (ki << 47n)) & 0xffffffffffffffffn;
  const s = f64[0]!;
  const zz = fma(C0, r, C1);
  const r2 = r * r;
  let y = fma(C2, r, 1);
  y = fma(zz, r2, y);
  return f(y * s);
}
