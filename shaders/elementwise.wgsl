// The residual add over m rows of n values, one invocation per value.
struct EwParams {
  n: u32,
  aStride: u32,
  aOff: u32,
  bStride: u32,
  bOff: u32,
  yStride: u32,
  yOff: u32,
  _p: u32,
}

@group(0) @binding(1) var<uniform> P: EwParams;
@group(0) @binding(2) var<storage, read> A: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

const WG = 64u;

fn element(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> vec2<u32> {
  let i = linearWg(wid, nwg) * WG + lid;
  return vec2<u32>(i / P.n, i % P.n);
}

// y += a (the residual add).
@compute @workgroup_size(WG)
fn add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
       @builtin(local_invocation_index) lid: u32) {
  let e = element(wid, nwg, lid);
  if (e.x >= stepM()) { return; }
  let i = P.yOff + e.x * P.yStride + e.y;
  Y[i] = Y[i] + A[P.aOff + e.x * P.aStride + e.y];
}
