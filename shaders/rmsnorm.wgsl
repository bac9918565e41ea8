// y[r] = g · x[r] / sqrt(mean(x[r]²) + eps), one workgroup per row (run.c's rmsnorm).
struct NormParams { dim: u32, xStride: u32, yStride: u32, eps: f32 }

@group(0) @binding(1) var<uniform> P: NormParams;
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<storage, read> G: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

const WG = 64u;
var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn rmsnorm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) tid: u32) {
  let r = linearWg(wid, nwg);
  if (r >= stepM()) { return; }
  let xb = r * P.xStride;
  var ss = 0.0;
  for (var i = tid; i < P.dim; i += WG) {
    let v = X[xb + i];
    ss += v * v;
  }
  red[tid] = ss;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) { red[tid] += red[tid + s]; }
    workgroupBarrier();
  }
  let scale = 1.0 / sqrt(red[0] / f32(P.dim) + P.eps);
  let yb = r * P.yStride;
  for (var i = tid; i < P.dim; i += WG) {
    Y[yb + i] = G[i] * (scale * X[xb + i]);
  }
}
