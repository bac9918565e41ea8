enable subgroups;
// Decode matmul (m = 1) where a workgroup is exactly one subgroup (WG = the adapter's minimum
// subgroup size): the K reduction is one subgroupAdd, with no workgroup memory or barrier.
// Each workgroup owns 4 rows of W at a time and loops over RPW such groups of rows, so
// that small workgroups still amortize their launch.
@group(0) @binding(3) var<storage, read> W: array<vec4<f32>>;
override WG: u32 = 4u;
override RPW: u32 = 4u;

@compute @workgroup_size(WG)
fn gemv_sg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) tid: u32) {
  let k4n = (P.K + 3u) / 4u;
  let nLast = P.N - 1u;
  for (var g = 0u; g < RPW; g++) {
    let n0 = (linearWg(wid, nwg) * RPW + g) * 4u;
    if (n0 >= P.N) { break; }
    let w0 = n0 * P.kStride4;
    let w1 = min(n0 + 1u, nLast) * P.kStride4;
    let w2 = min(n0 + 2u, nLast) * P.kStride4;
    let w3 = min(n0 + 3u, nLast) * P.kStride4;
    var acc = vec4<f32>(0.0);
    var ss = 0.0;
    for (var k4 = tid; k4 < k4n; k4 += WG) {
      let raw = xRaw4(0u, k4 * 4u);
      if (MODE == 1u) { ss += dot(raw, raw); }
      let x = xEff4(0u, k4 * 4u, raw);
      acc += vec4<f32>(dot(W[w0 + k4], x), dot(W[w1 + k4], x), dot(W[w2 + k4], x), dot(W[w3 + k4], x));
    }
    acc = subgroupAdd(acc);
    var scale = 1.0;
    if (MODE == 1u) { scale = rowScale(subgroupAdd(ss)); }
    if (tid < 4u && n0 + tid < P.N) {
      storeY(0u, n0 + tid, acc[tid] * scale);
    }
  }
}

