// Correctly rounded f32 division, square root and exp, as C's `/`, sqrtf and expf give run.c /
// runq.c on a CPU. WGSL allows 2.5 ULP for a division and more for sqrt and exp (SwiftShader's
// exp is a polynomial a few ULP off, and it turns a division by a constant into a multiplication
// by the reciprocal), and the W8A8 path requantises every activation, so one ULP can flip an
// int8 and, many steps later, a token. Built from error-free transformations (Dekker's product,
// Knuth's sum), so they need a compiler that neither contracts a·b + c into an fma nor
// reassociates; the kernel tests check the results bit for bit.

// a = hi + lo with hi holding the top 12 bits (Veltkamp).
fn xSplit(a: f32) -> vec2<f32> {
  let c = 4097.0 * a;
  let hi = c - (c - a);
  return vec2<f32>(hi, a - hi);
}

// a·b = p + e exactly (Dekker).
fn xTwoProd(a: f32, b: f32) -> vec2<f32> {
  let p = a * b;
  let x = xSplit(a);
  let y = xSplit(b);
  let e = ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y;
  return vec2<f32>(p, e);
}

// a + b = s + e exactly (Knuth).
fn xTwoSum(a: f32, b: f32) -> vec2<f32> {
  let s = a + b;
  let bb = s - a;
  return vec2<f32>(s, (a - (s - bb)) + (b - bb));
}

// The f32 neighbour of a finite x on the side of `up`.
fn xNext(x: f32, up: bool) -> f32 {
  if (x == 0.0) { return select(-1.0e-45, 1.0e-45, up); }
  let b = bitcast<u32>(x);
  return bitcast<f32>(select(b - 1u, b + 1u, up == (x > 0.0)));
}

// |a − c·b| (exact up to its own rounding): the nearest f32 to a/b minimises it.
fn xDivErr(a: f32, b: f32, c: f32) -> f32 {
  let p = xTwoProd(c, b);
  return abs((a - p.x) - p.y);
}

// a / b rounded to nearest even.
fn divRn(a: f32, b: f32) -> f32 {
  var q = a / b;
  if (b == 0.0 || q != q || abs(q) > 3.0e38 || abs(q) < 1.0e-37) { return q; }
  var e = xDivErr(a, b, q);
  for (var i = 0; i < 4; i++) {
    let p = xTwoProd(q, b);
    let r = (a - p.x) - p.y; // a − q·b: the exact quotient is above q when r/b > 0
    let n = xNext(q, (r > 0.0) == (b > 0.0));
    let en = xDivErr(a, b, n);
    if (en < e || (en == e && (bitcast<u32>(n) & 1u) == 0u)) {
      q = n;
      e = en;
    } else {
      break;
    }
  }
  return q;
}

// sqrt(x) rounded to nearest (x ≥ 0): the neighbour whose square is nearest x.
fn sqrtRn(x: f32) -> f32 {
  var s = sqrt(x);
  if (x <= 0.0 || s != s || s > 1.8e19 || s < 1.0e-18) { return s; }
  for (var i = 0; i < 4; i++) {
    let p = xTwoProd(s, s);
    let r = (x - p.x) - p.y;
    let n = xNext(s, r > 0.0);
    let pn = xTwoProd(n, n);
    if (abs((x - pn.x) - pn.y) < abs(r)) { s = n; } else { break; }
  }
  return s;
}

// Double-f32 (hi + lo) arithmetic for exp's polynomial.
fn ddMul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let p = xTwoProd(a.x, b.x);
  let lo = p.y + (a.x * b.y + a.y * b.x);
  let s = p.x + lo;
  return vec2<f32>(s, lo - (s - p.x));
}
fn ddAdd(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let s = xTwoSum(a.x, b.x);
  let lo = s.y + (a.y + b.y);
  let h = s.x + lo;
  return vec2<f32>(h, lo - (h - s.x));
}

// 1/k! for k = 0..13 as hi + lo.
const EXP_C = array<vec2<f32>, 14>(
  vec2<f32>(1.0, 0.0), vec2<f32>(1.0, 0.0), vec2<f32>(0.5, 0.0),
  vec2<f32>(0.1666666716337204, -4.967053879312289e-09),
  vec2<f32>(0.0416666679084301, -1.2417634698280722e-09),
  vec2<f32>(0.008333333767950535, -4.34617203337595e-10),
  vec2<f32>(0.0013888889225199819, -3.3631094437103215e-11),
  vec2<f32>(0.00019841270113829523, -2.725596874933456e-12),
  vec2<f32>(2.4801587642286904e-05, -3.40699609366682e-13),
  vec2<f32>(2.7557318844628753e-06, 3.793571224297229e-14),
  vec2<f32>(2.755731998149713e-07, -7.575112209051195e-15),
  vec2<f32>(2.5052107943679403e-08, 4.4176230446483665e-16),
  vec2<f32>(2.0876755879584152e-09, 1.1082839147459852e-16),
  vec2<f32>(1.6059044372074283e-10, -5.352526511562726e-18),
);

// exp(x) rounded to nearest: x = k·ln2 + r (Cody–Waite with ln2 in three parts, the first two
// of 16 bits so k·L1 and k·L2 are exact), exp(r) by its Taylor series in double-f32 (error
// ~2^-44), then 2^k. Subnormal results are flushed to 0 (they cannot change an f32 softmax sum).
fn expRn(x: f32) -> f32 {
  if (x != x) { return x; }
  if (x > 88.72284) { return exp(x); } // overflows, as expf does
  if (x < -87.33654) { return 0.0; }
  let k = round(x * 1.4426950216293335);
  let t = x - k * 0.693145751953125;
  var r = xTwoSum(t, -k * 1.4286197256296873e-06);
  r = ddAdd(r, vec2<f32>(-k * -1.2905320041778356e-11, 0.0));
  var p = EXP_C[13];
  for (var i = 12; i >= 0; i--) { p = ddAdd(ddMul(p, r), EXP_C[i]); }
  return ldexp(p.x + p.y, i32(k));
}
