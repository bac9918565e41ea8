// Shared by the matmul variants: y[r][rowStart + n] (+)= Σ_k xin[r][k] · W[n][k] (+ bias),
// for one row chunk of W (chunks keep each weight binding under maxStorageBufferBindingSize).
// MODE 0: xin = x. MODE 1 (fused RMSNorm): xin = x · g, and the sum is scaled by
// 1/sqrt(mean(x²) + eps) of the raw row. MODE 2 (fused SiLU·mul): xin = silu(a) · b with
// a = X[xOff + r·xStride + k], b = AUX[bOff + r·bStride + k].
struct MatmulParams {
  K: u32,        // reduction length
  N: u32,        // rows of W in this chunk
  kStride4: u32, // W row stride in vec4s (rows are zero-padded to a multiple of 4)
  rowStart: u32, // first output column of this chunk
  yStride: u32,  // output row stride (floats)
  xStride: u32,
  xOff: u32,
  bStride: u32,
  bOff: u32,
  eps: f32,
  _p0: u32,
  _p1: u32,
}

@group(0) @binding(1) var<uniform> P: MatmulParams;
// Bindings 2 (X) and 6 (AUX) and their loaders come from matmul_x_f32.wgsl or, when every
// row of x (and of AUX) starts on a vec4, matmul_x_vec4.wgsl (one vec4 load instead of four).
// Binding 3 is W, declared by each variant (array<vec4<f32>> or array<f32>).
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
@group(0) @binding(5) var<storage, read> BIAS: array<f32>;

override MODE: u32 = 0u;
// K % 4 == 0: every vec4 of a row is whole, so loads need no bounds branch.
override ALIGNED: bool = false;
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;

// Scalar forms, for variants whose adjacent invocations read adjacent k (caller keeps k < K).
fn xRaw1(r: u32, k: u32) -> f32 {
  return xScalar(P.xOff + r * P.xStride + k);
}

fn xEff1(r: u32, k: u32, raw: f32) -> f32 {
  if (MODE == 1u) {
    return raw * auxScalar(k);
  } else if (MODE == 2u) {
    return raw / (1.0 + exp(-raw)) * auxScalar(P.bOff + r * P.bStride + k);
  }
  return raw;
}

// The raw input row r at k..k+3 (zero past K).
fn xRaw4(r: u32, k: u32) -> vec4<f32> {
  return load4(P.xOff + r * P.xStride + k, k);
}

// The effective input from the raw one (see MODE above).
fn xEff4(r: u32, k: u32, raw: vec4<f32>) -> vec4<f32> {
  if (MODE == 1u) {
    return raw * aux4(k, k);
  } else if (MODE == 2u) {
    let b = aux4(P.bOff + r * P.bStride + k, k);
    return raw / (1.0 + exp(-raw)) * b;
  }
  return raw;
}

// Scale applied to the finished dot product of row r: 1/rms for MODE 1.
fn rowScale(ss: f32) -> f32 {
  if (MODE == 1u) {
    return 1.0 / sqrt(ss / f32(P.K) + P.eps);
  }
  return 1.0;
}

fn storeY(r: u32, n: u32, v: f32) {
  var out = v;
  if (HAS_BIAS) { out += BIAS[P.rowStart + n]; }
  let i = r * P.yStride + P.rowStart + n;
  if (ACCUMULATE) { out += Y[i]; }
  Y[i] = out;
}
