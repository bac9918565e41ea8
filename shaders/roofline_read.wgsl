// The read roofline of `bench kernels`: invocations that only load a buffer and sum it. A decode
// matmul must load every weight at least once, so on an adapter where loads dominate (SwiftShader
// makes each storage load with a run-time index a gather), no gemv can beat this kernel's time
// for the same bytes in the same pattern. Three access patterns, as the adapter's speed depends
// on them: `read_chunked` gives each invocation a contiguous run, `read_strided` interleaves
// invocations as a GPU coalesces best, and `read_rows4` is gemv_sg's own weight loads (a 4-lane
// workgroup over 4 rows of K4 vec4s) without its x loads or products. Each writes its sum so that
// the loads cannot be dropped.
@group(0) @binding(0) var<storage, read> W: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;
override WG: u32 = 64u;
// vec4s per invocation.
override PER: u32 = 256u;
// Row length in vec4s, for read_rows4.
override K4: u32 = 512u;

@compute @workgroup_size(WG)
fn read_chunked(@builtin(global_invocation_id) g: vec3<u32>) {
  let base = g.x * PER;
  var acc = vec4<f32>(0.0);
  for (var i = 0u; i < PER; i++) { acc += W[base + i]; }
  Y[g.x] = dot(acc, vec4<f32>(1.0));
}

@compute @workgroup_size(WG)
fn read_strided(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let total = nwg.x * WG;
  var acc = vec4<f32>(0.0);
  for (var i = 0u; i < PER; i++) { acc += W[g.x + i * total]; }
  Y[g.x] = dot(acc, vec4<f32>(1.0));
}

@compute @workgroup_size(4)
fn read_rows4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) l: u32) {
  let r0 = wid.x * 4u * K4;
  var acc = vec4<f32>(0.0);
  for (var k = l; k < K4; k += 4u) {
    acc += W[r0 + k] + W[r0 + K4 + k] + W[r0 + 2u * K4 + k] + W[r0 + 3u * K4 + k];
  }
  Y[wid.x * 4u + l] = dot(acc, vec4<f32>(1.0));
}
