// W8A8 activations, as llama2.c's runq.c `quantize` (its divisions, sqrtf and expf correctly
// rounded as on a CPU: exact_math.wgsl): per row r of xin and per group of GS
// values, scale = max|xin| / 127 and q = round(xin / scale) (halves away from zero), packed four
// int8 per u32 into XQ (K/4 words per row) with the scales in XS (K/GS per row). An all-zero
// group gets scale 0 and zeros. One invocation per row, in runq.c's order (the sum of squares
// sequentially), with no barrier: rows are short next to the matmul that follows.
// MODE 0: xin = x. MODE 1: xin = g · (x / rms(x)) computed as runq.c does, g in AUX.
// MODE 2: xin = silu(a) · b with a = x, b = AUX[bOff + r·bStride + k] (runq.c's SwiGLU order).
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
    XS[r * nG + g] = scale;
    for (var j = 0u; j < GS / 4u; j++) {
      var word = 0u;
      for (var b = 0u; b < 4u; b++) {
        var q = 0;
        if (scale > 0.0) { q = i32(roundAway(divRn(xin(r, g * GS + j * 4u + b, inv), scale))); }
        word |= (u32(q) & 0xffu) << (8u * b);
      }
      XQ[r * (P.K / 4u) + g * (GS / 4u) + j] = word;
    }
  }
}
