// W8A8 activations, as llama2.c's runq.c `quantize` (its divisions, sqrtf and expf correctly
// rounded as on a CPU: exact_math.wgsl): per row r of xin and per group of GS
// values, scale = max|xin| / 127 and q = round(xin / scale) (halves away from zero), packed four
// int8 per u32 into XQ (K/4 words per row) with the scales in XS (K/GS per row). An all-zero
// group gets scale 0 and zeros. One invocation per row, in runq.c's order (the sum of squares
// sequentially), with no barrier: rows are short next to the matmul that follows.
// MODE 0: xin = x. MODE 1: xin = g · (x / rms(x)) computed as runq.c does, g in AUX.
// MODE 2: xin = silu(a) · b with a = x, b = AUX[bOff + r·bStride + k] (runq.c's SwiGLU order).
// PAIRS (W4A8, GS = 32; matmul_q4a8.wgsl): the same int8 values, stored as the pair words its
// multiplies take instead of packed bytes: per group 16 words, word 4w + j = q[b] + 65536·q[a]
// for (a, b) = (4w, 4w + 2), (4w + 1, 4w + 3), (16 + 4w, 18 + 4w), (17 + 4w, 19 + 4w), j = 0..3;
// XS holds (scale, Σ q as f32) per group.
struct QuantParams {
  K: u32,
  xStride: u32,
  xOff: u32,
  bStride: u32,
  bOff: u32,
  eps: f32,
  _p0: u32,
  _p1: u32,
}

@group(0) @binding(1) var<uniform> P: QuantParams;
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<storage, read> AUX: array<f32>;
@group(0) @binding(4) var<storage, read_write> XQ: array<u32>;
@group(0) @binding(5) var<storage, read_write> XS: array<f32>;

override MODE: u32 = 0u;
override GS: u32 = 32u;
override PAIRS: bool = false;

fn xin(r: u32, k: u32, inv: f32) -> f32 {
  let v = X[P.xOff + r * P.xStride + k];
  if (MODE == 1u) {
    return AUX[k] * (inv * v);
  } else if (MODE == 2u) {
    return (v * divRn(1.0, 1.0 + expRn(-v))) * AUX[P.bOff + r * P.bStride + k];
  }
  return v;
}

// C's round(): |v| - floor(|v|) is exact in f32, so the half-way test is too.
fn roundAway(v: f32) -> f32 {
  let a = abs(v);
  let f = floor(a);
  return sign(v) * select(f, f + 1.0, a - f >= 0.5);
}

fn quant1(r: u32, k: u32, inv: f32, scale: f32) -> i32 {
  if (scale > 0.0) { return i32(roundAway(divRn(xin(r, k, inv), scale))); }
  return 0;
}

@compute @workgroup_size(1)
fn quantize_q8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  // Dispatched with exactly m workgroups, so every row exists.
  let r = linearWg(wid, nwg);
  var inv = 1.0;
  if (MODE == 1u) {
    var ss = 0.0;
    for (var k = 0u; k < P.K; k++) {
      let v = X[P.xOff + r * P.xStride + k];
      ss += v * v;
    }
    inv = divRn(1.0, sqrtRn(divRn(ss, f32(P.K)) + P.eps));
  }
  let nG = P.K / GS;
  for (var g = 0u; g < nG; g++) {
    var wmax = 0.0;
    for (var i = 0u; i < GS; i++) { wmax = max(wmax, abs(xin(r, g * GS + i, inv))); }
    let scale = divRn(wmax, 127.0);
    if (PAIRS) {
      var q: array<i32, 32>;
      var sum = 0;
      for (var i = 0u; i < 32u; i++) {
        q[i] = quant1(r, g * 32u + i, inv, scale);
        sum += q[i];
      }
      XS[2u * (r * nG + g)] = scale;
      XS[2u * (r * nG + g) + 1u] = f32(sum);
      for (var w = 0u; w < 4u; w++) {
        let o = (r * nG + g) * 16u + w * 4u;
        let a = 4u * w;
        XQ[o] = u32(q[a + 2u]) + (u32(q[a]) << 16u);
        XQ[o + 1u] = u32(q[a + 3u]) + (u32(q[a + 1u]) << 16u);
        XQ[o + 2u] = u32(q[a + 18u]) + (u32(q[a + 16u]) << 16u);
        XQ[o + 3u] = u32(q[a + 19u]) + (u32(q[a + 17u]) << 16u);
      }
      continue;
    }
    XS[r * nG + g] = scale;
    for (var j = 0u; j < GS / 4u; j++) {
      var word = 0u;
      for (var b = 0u; b < 4u; b++) {
        word |= (u32(quant1(r, g * GS + j * 4u + b, inv, scale)) & 0xffu) << (8u * b);
      }
      XQ[r * (P.K / 4u) + g * (GS / 4u) + j] = word;
    }
  }
}
