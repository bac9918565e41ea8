// matmul input loaders for x (and AUX) rows at any float offset.
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(6) var<storage, read> AUX: array<f32>;

fn xScalar(i: u32) -> f32 { return X[i]; }
fn auxScalar(i: u32) -> f32 { return AUX[i]; }

// 4 floats from base (zero past K, k being base's column).
fn load4(base: u32, k: u32) -> vec4<f32> {
  if (ALIGNED || k + 4u <= P.K) {
    return vec4<f32>(X[base], X[base + 1u], X[base + 2u], X[base + 3u]);
  }
  var v = vec4<f32>(0.0);
  for (var i = 0u; i < 4u; i++) {
    if (k + i < P.K) { v[i] = X[base + i]; }
  }
  return v;
}

fn aux4(base: u32, k: u32) -> vec4<f32> {
  if (ALIGNED || k + 4u <= P.K) {
    return vec4<f32>(AUX[base], AUX[base + 1u], AUX[base + 2u], AUX[base + 3u]);
  }
  var v = vec4<f32>(0.0);
  for (var i = 0u; i < 4u; i++) {
    if (k + i < P.K) { v[i] = AUX[base + i]; }
  }
  return v;
}
