/**
 * A double fused multiply-add in plain JavaScript: glibc's float functions, built for FMA CPUs,
 * round each contracted `a + b·c` once, and reproducing their bits needs the same.
 */
const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

/** The neighbour of finite nonzero x towards the sign of `dir`. */
function nextToward(x: number, dir: number): number {
  f64[0] = x;
  u64[0] = (x > 0) === (dir > 0) ? u64[0]! + 1n : u64[0]! - 1n;
  return f64[0]!;
}

/**
 * a·b + c rounded once, for finite operands whose product neither overflows nor underflows:
 * the exact product as two doubles (Veltkamp–Dekker), then Boldo and Melquiond's emulation,
 * which rounds the low parts' sum to odd before the final round to nearest.
 */
export function fma(a: number, b: number, c: number): number {
  const p = a * b;
  if (p === 0 || !Number.isFinite(p) || Math.abs(p) < 2 ** -900 || Math.abs(p) > 2 ** 900) return p + c;
  const sa = 134217729 * a, ah = sa - (sa - a), al = a - ah;
  const sb = 134217729 * b, bh = sb - (sb - b), bl = b - bh;
  const e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
  const th = c + p, bb = th - c;
  const tl = (c - (th - bb)) + (p - bb);
  // v = tl + e rounded to odd: the neighbour pair brackets the exact sum, and exactly one is odd.
  let v = tl + e;
  const vb = v - tl;
  const ve = (tl - (v - vb)) + (e - vb);
  if (ve !== 0 && v !== 0) {
    f64[0] = v;
    if ((u64[0]! & 1n) === 0n) v = nextToward(v, ve);
  }
  return th + v;
}
