enable subgroups;
// Decode matmul for 2 ≤ m ≤ 8 on adapters whose subgroups are 4 lanes wide and whose storage
// loads are gathers whatever the addresses (SwiftShader): as gemm_bcast (matmul_bcast.wgsl), a
// workgroup is one subgroup and lanes share x rows through subgroupBroadcast, but each lane
// owns 8 rows of W instead of 4. Per 4 k a lane makes 2 x loads and 8 W loads for 64 dots
// (1.25 loads per W vec4, as the m = 1 gemv; gemm_bcast: 1.5), and the 8×32 block of y halves
// the x loads and broadcasts per weight. The accumulators are spelled out because SwiftShader
// turns a dynamically indexed private array into memory gathers: a{i}_{c} is x row r0 + i
// against W rows n0 + 4c .. 4c + 3.
//
// ROW_SCALE: x is already the effective input (matmul_prep.wgsl wrote it once for all
// workgroups) and row r's scale is AUX[P.bOff + r] (1/rms for a fused RMSNorm).
@group(0) @binding(3) var<storage, read> W: array<vec4<f32>>;
override ROW_SCALE: bool = false;

@compute @workgroup_size(4)
fn gemm_bcast32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(subgroup_invocation_id) lane: u32) {
  let m = stepM();
  let nb = (wid.x + wid.z * nwg.x) * 32u;
  let r0 = wid.y * 8u;
  if (nb >= P.N || r0 >= m) { return; }
  let n0 = nb + lane * 8u;
  let nLast = P.N - 1u;
  let wb0 = min(n0 + 0u, nLast) * P.kStride4;
  let wb1 = min(n0 + 1u, nLast) * P.kStride4;
  let wb2 = min(n0 + 2u, nLast) * P.kStride4;
  let wb3 = min(n0 + 3u, nLast) * P.kStride4;
  let wb4 = min(n0 + 4u, nLast) * P.kStride4;
  let wb5 = min(n0 + 5u, nLast) * P.kStride4;
  let wb6 = min(n0 + 6u, nLast) * P.kStride4;
  let wb7 = min(n0 + 7u, nLast) * P.kStride4;
  let rr0 = min(r0 + 0u + lane, m - 1u);
  var ss0 = 0.0;
  let rr1 = min(r0 + 4u + lane, m - 1u);
  var ss1 = 0.0;
  var a0_0 = vec4<f32>(0.0);
  var a0_1 = vec4<f32>(0.0);
  var a1_0 = vec4<f32>(0.0);
  var a1_1 = vec4<f32>(0.0);
  var a2_0 = vec4<f32>(0.0);
  var a2_1 = vec4<f32>(0.0);
  var a3_0 = vec4<f32>(0.0);
  var a3_1 = vec4<f32>(0.0);
  var a4_0 = vec4<f32>(0.0);
  var a4_1 = vec4<f32>(0.0);
  var a5_0 = vec4<f32>(0.0);
  var a5_1 = vec4<f32>(0.0);
  var a6_0 = vec4<f32>(0.0);
  var a6_1 = vec4<f32>(0.0);
  var a7_0 = vec4<f32>(0.0);
  var a7_1 = vec4<f32>(0.0);
  let k4n = (P.K + 3u) / 4u;
  let k4u = k4n - k4n % 1u;
  for (var k4 = 0u; k4 < k4u; k4 += 1u) {
    let q0_0 = xRaw4(rr0, (k4 + 0u) * 4u);
    if (MODE == 1u) { ss0 += dot(q0_0, q0_0); }
    let xx0_0 = xEff4(rr0, (k4 + 0u) * 4u, q0_0);
    let q1_0 = xRaw4(rr1, (k4 + 0u) * 4u);
    if (MODE == 1u) { ss1 += dot(q1_0, q1_0); }
    let xx1_0 = xEff4(rr1, (k4 + 0u) * 4u, q1_0);
    let v0_0 = W[wb0 + k4 + 0u];
    let v1_0 = W[wb1 + k4 + 0u];
    let v2_0 = W[wb2 + k4 + 0u];
    let v3_0 = W[wb3 + k4 + 0u];
    let v4_0 = W[wb4 + k4 + 0u];
    let v5_0 = W[wb5 + k4 + 0u];
    let v6_0 = W[wb6 + k4 + 0u];
    let v7_0 = W[wb7 + k4 + 0u];
    let x0_0 = subgroupBroadcast(xx0_0, 0u);
    a0_0 += vec4<f32>(dot(x0_0, v0_0), dot(x0_0, v1_0), dot(x0_0, v2_0), dot(x0_0, v3_0));
    a0_1 += vec4<f32>(dot(x0_0, v4_0), dot(x0_0, v5_0), dot(x0_0, v6_0), dot(x0_0, v7_0));
    let x1_0 = subgroupBroadcast(xx0_0, 1u);
    a1_0 += vec4<f32>(dot(x1_0, v0_0), dot(x1_0, v1_0), dot(x1_0, v2_0), dot(x1_0, v3_0));
    a1_1 += vec4<f32>(dot(x1_0, v4_0), dot(x1_0, v5_0), dot(x1_0, v6_0), dot(x1_0, v7_0));
    let x2_0 = subgroupBroadcast(xx0_0, 2u);
    a2_0 += vec4<f32>(dot(x2_0, v0_0), dot(x2_0, v1_0), dot(x2_0, v2_0), dot(x2_0, v3_0));
    a2_1 += vec4<f32>(dot(x2_0, v4_0), dot(x2_0, v5_0), dot(x2_0, v6_0), dot(x2_0, v7_0));
    let x3_0 = subgroupBroadcast(xx0_0, 3u);
    a3_0 += vec4<f32>(dot(x3_0, v0_0), dot(x3_0, v1_0), dot(x3_0, v2_0), dot(x3_0, v3_0));
    a3_1 += vec4<f32>(dot(x3_0, v4_0), dot(x3_0, v5_0), dot(x3_0, v6_0), dot(x3_0, v7_0));
    let x4_0 = subgroupBroadcast(xx1_0, 0u);
    a4_0 += vec4<f32>(dot(x4_0, v0_0), dot(x4_0, v1_0), dot(x4_0, v2_0), dot(x4_0, v3_0));
    a4_1 += vec4<f32>(dot(x4_0, v4_0), dot(x4_0, v5_0), dot(x4_0, v6_0), dot(x4_0, v7_0));
    let x5_0 = subgroupBroadcast(xx1_0, 1u);
    a5_0 += vec4<f32>(dot(x5_0, v0_0), dot(x5_0, v1_0), dot(x5_0, v2_0), dot(x5_0, v3_0));
    a5_1 += vec4<f32>(dot(x5_0, v4_0), dot(x5_0, v5_0), dot(x5_0, v6_0), dot(x5_0, v7_0));
    let x6_0 = subgroupBroadcast(xx1_0, 2u);
    a6_0 += vec4<f32>(dot(x6_0, v0_0), dot(x6_0, v1_0), dot(x6_0, v2_0), dot(x6_0, v3_0));
    a6_1 += vec4<f32>(dot(x6_0, v4_0), dot(x6_0, v5_0), dot(x6_0, v6_0), dot(x6_0, v7_0));
    let x7_0 = subgroupBroadcast(xx1_0, 3u);
    a7_0 += vec4<f32>(dot(x7_0, v0_0), dot(x7_0, v1_0), dot(x7_0, v2_0), dot(x7_0, v3_0));
    a7_1 += vec4<f32>(dot(x7_0, v4_0), dot(x7_0, v5_0), dot(x7_0, v6_0), dot(x7_0, v7_0));
  }
  var scale = array<f32, 8>(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0);
  if (ROW_SCALE) {
    scale = array<f32, 8>(auxScalar(P.bOff + min(r0 + 0u, m - 1u)), auxScalar(P.bOff + min(r0 + 1u, m - 1u)), auxScalar(P.bOff + min(r0 + 2u, m - 1u)), auxScalar(P.bOff + min(r0 + 3u, m - 1u)), auxScalar(P.bOff + min(r0 + 4u, m - 1u)), auxScalar(P.bOff + min(r0 + 5u, m - 1u)), auxScalar(P.bOff + min(r0 + 6u, m - 1u)), auxScalar(P.bOff + min(r0 + 7u, m - 1u)));
  } else if (MODE == 1u) {
    scale = array<f32, 8>(rowScale(subgroupBroadcast(ss0, 0u)), rowScale(subgroupBroadcast(ss0, 1u)), rowScale(subgroupBroadcast(ss0, 2u)), rowScale(subgroupBroadcast(ss0, 3u)), rowScale(subgroupBroadcast(ss1, 0u)), rowScale(subgroupBroadcast(ss1, 1u)), rowScale(subgroupBroadcast(ss1, 2u)), rowScale(subgroupBroadcast(ss1, 3u)));
  }
  let acc0 = array<vec4<f32>, 8>(a0_0, a1_0, a2_0, a3_0, a4_0, a5_0, a6_0, a7_0);
  let acc1 = array<vec4<f32>, 8>(a0_1, a1_1, a2_1, a3_1, a4_1, a5_1, a6_1, a7_1);
  for (var i = 0u; i < 8u; i++) {
    let r = r0 + i;
    if (r >= m) { break; }
    for (var j = 0u; j < 4u; j++) {
      if (n0 + 0u + j < P.N) { storeY(r, n0 + 0u + j, acc0[i][j] * scale[i]); }
      if (n0 + 4u + j < P.N) { storeY(r, n0 + 4u + j, acc1[i][j] * scale[i]); }
    }
  }
}
