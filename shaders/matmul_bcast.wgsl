enable subgroups;
// Prefill matmul (m > 1) for adapters whose subgroups are 4 lanes wide and whose loads cost
// one per float and lane whatever the addresses (SwiftShader gathers every storage load, even
// when lanes read adjacent floats). A workgroup is one subgroup and owns an RM×16 block of y:
// lane l computes the RM×4 sub-block of W rows nb + 4l..4l+3 and loads only RM / 4 of the RM
// rows of x (r0 + 4i + l), which subgroupBroadcast shares with the other lanes. Per 4 k a lane
// makes RM + 16 loads for 16·RM multiply-adds (gemm_regblock: 32 for 64).
// gemm_bcast (RM = 8) and gemm_bcast16 (RM = 16) differ only in RM; the accumulators are spelled out
// because SwiftShader turns a dynamically indexed private array into memory gathers.
@group(0) @binding(3) var<storage, read> W: array<vec4<f32>>;

@compute @workgroup_size(4)
fn gemm_bcast(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(subgroup_invocation_id) lane: u32) {
  let m = stepM();
  let nb = (wid.x + wid.z * nwg.x) * 16u;
  let r0 = wid.y * 8u;
  // Uniform across the workgroup (= the subgroup), so the broadcasts below stay uniform.
  if (nb >= P.N || r0 >= m) { return; }
  let n0 = nb + lane * 4u;
  let nLast = P.N - 1u;
  let wb0 = min(n0 + 0u, nLast) * P.kStride4;
  let wb1 = min(n0 + 1u, nLast) * P.kStride4;
  let wb2 = min(n0 + 2u, nLast) * P.kStride4;
  let wb3 = min(n0 + 3u, nLast) * P.kStride4;
  let ra = min(r0 + 0u + lane, m - 1u);
  let rb = min(r0 + 4u + lane, m - 1u);
  var a0 = vec4<f32>(0.0);
  var a1 = vec4<f32>(0.0);
  var a2 = vec4<f32>(0.0);
  var a3 = vec4<f32>(0.0);
  var a4 = vec4<f32>(0.0);
  var a5 = vec4<f32>(0.0);
  var a6 = vec4<f32>(0.0);
  var a7 = vec4<f32>(0.0);
  var ssa = 0.0;
  var ssb = 0.0;
  let k4n = (P.K + 3u) / 4u;
  for (var k4 = 0u; k4 < k4n; k4++) {
    let k = k4 * 4u;
    let qa = xRaw4(ra, k);
    let qb = xRaw4(rb, k);
    if (MODE == 1u) {
      ssa += dot(qa, qa);
      ssb += dot(qb, qb);
    }
    let xa = xEff4(ra, k, qa);
    let xb = xEff4(rb, k, qb);
    let v0 = W[wb0 + k4];
    let v1 = W[wb1 + k4];
    let v2 = W[wb2 + k4];
    let v3 = W[wb3 + k4];
    let x0 = subgroupBroadcast(xa, 0u);
    a0 += vec4<f32>(dot(x0, v0), dot(x0, v1), dot(x0, v2), dot(x0, v3));
    let x1 = subgroupBroadcast(xa, 1u);
    a1 += vec4<f32>(dot(x1, v0), dot(x1, v1), dot(x1, v2), dot(x1, v3));
    let x2 = subgroupBroadcast(xa, 2u);
    a2 += vec4<f32>(dot(x2, v0), dot(x2, v1), dot(x2, v2), dot(x2, v3));
    let x3 = subgroupBroadcast(xa, 3u);
    a3 += vec4<f32>(dot(x3, v0), dot(x3, v1), dot(x3, v2), dot(x3, v3));
    let x4 = subgroupBroadcast(xb, 0u);
    a4 += vec4<f32>(dot(x4, v0), dot(x4, v1), dot(x4, v2), dot(x4, v3));
    let x5 = subgroupBroadcast(xb, 1u);
    a5 += vec4<f32>(dot(x5, v0), dot(x5, v1), dot(x5, v2), dot(x5, v3));
    let x6 = subgroupBroadcast(xb, 2u);
    a6 += vec4<f32>(dot(x6, v0), dot(x6, v1), dot(x6, v2), dot(x6, v3));
    let x7 = subgroupBroadcast(xb, 3u);
    a7 += vec4<f32>(dot(x7, v0), dot(x7, v1), dot(x7, v2), dot(x7, v3));
  }
  var scale = array<f32, 8>(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0);
  if (MODE == 1u) {
    scale = array<f32, 8>(
      rowScale(subgroupBroadcast(ssa, 0u)), rowScale(subgroupBroadcast(ssa, 1u)),
      rowScale(subgroupBroadcast(ssa, 2u)), rowScale(subgroupBroadcast(ssa, 3u)),
      rowScale(subgroupBroadcast(ssb, 0u)), rowScale(subgroupBroadcast(ssb, 1u)),
      rowScale(subgroupBroadcast(ssb, 2u)), rowScale(subgroupBroadcast(ssb, 3u)));
  }
  let acc = array<vec4<f32>, 8>(a0, a1, a2, a3, a4, a5, a6, a7);
  for (var i = 0u; i < 8u; i++) {
    let r = r0 + i;
    if (r >= m) { break; }
    for (var j = 0u; j < 4u; j++) {
      if (n0 + j < P.N) { storeY(r, n0 + j, acc[i][j] * scale[i]); }
    }
  }
}

@compute @workgroup_size(4)
fn gemm_bcast16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(subgroup_invocation_id) lane: u32) {
  let m = stepM();
  let nb = (wid.x + wid.z * nwg.x) * 16u;
  let r0 = wid.y * 16u;
  // Uniform across the workgroup (= the subgroup), so the broadcasts below stay uniform.
  if (nb >= P.N || r0 >= m) { return; }
  let n0 = nb + lane * 4u;
  let nLast = P.N - 1u;
  let wb0 = min(n0 + 0u, nLast) * P.kStride4;
  let wb1 = min(n0 + 1u, nLast) * P.kStride4;
  let wb2 = min(n0 + 2u, nLast) * P.kStride4;
  let wb3 = min(n0 + 3u, nLast) * P.kStride4;
  let ra = min(r0 + 0u + lane, m - 1u);
  let rb = min(r0 + 4u + lane, m - 1u);
  let rc = min(r0 + 8u + lane, m - 1u);
  let rd = min(r0 + 12u + lane, m - 1u);
  var a0 = vec4<f32>(0.0);
  var a1 = vec4<f32>(0.0);
  var a2 = vec4<f32>(0.0);
  var a3 = vec4<f32>(0.0);
  var a4 = vec4<f32>(0.0);
  var a5 = vec4<f32>(0.0);
  var a6 = vec4<f32>(0.0);
  var a7 = vec4<f32>(0.0);
  var a8 = vec4<f32>(0.0);
  var a9 = vec4<f32>(0.0);
  var a10 = vec4<f32>(0.0);
  var a11 = vec4<f32>(0.0);
  var a12 = vec4<f32>(0.0);
  var a13 = vec4<f32>(0.0);
  var a14 = vec4<f32>(0.0);
  var a15 = vec4<f32>(0.0);
  var ssa = 0.0;
  var ssb = 0.0;
  var ssc = 0.0;
  var ssd = 0.0;
  let k4n = (P.K + 3u) / 4u;
  for (var k4 = 0u; k4 < k4n; k4++) {
    let k = k4 * 4u;
    let qa = xRaw4(ra, k);
    let qb = xRaw4(rb, k);
    let qc = xRaw4(rc, k);
    let qd = xRaw4(rd, k);
    if (MODE == 1u) {
      ssa += dot(qa, qa);
      ssb += dot(qb, qb);
      ssc += dot(qc, qc);
      ssd += dot(qd, qd);
    }
    let xa = xEff4(ra, k, qa);
    let xb = xEff4(rb, k, qb);
    let xc = xEff4(rc, k, qc);
    let xd = xEff4(rd, k, qd);
    let v0 = W[wb0 + k4];
    let v1 = W[wb1 + k4];
    let v2 = W[wb2 + k4];
    let v3 = W[wb3 + k4];
    let x0 = subgroupBroadcast(xa, 0u);
    a0 += vec4<f32>(dot(x0, v0), dot(x0, v1), dot(x0, v2), dot(x0, v3));
    let x1 = subgroupBroadcast(xa, 1u);
    a1 += vec4<f32>(dot(x1, v0), dot(x1, v1), dot(x1, v2), dot(x1, v3));
    let x2 = subgroupBroadcast(xa, 2u);
    a2 += vec4<f32>(dot(x2, v0), dot(x2, v1), dot(x2, v2), dot(x2, v3));
    let x3 = subgroupBroadcast(xa, 3u);
    a3 += vec4<f32>(dot(x3, v0), dot(x3, v1), dot(x3, v2), dot(x3, v3));
    let x4 = subgroupBroadcast(xb, 0u);
    a4 += vec4<f32>(dot(x4, v0), dot(x4, v1), dot(x4, v2), dot(x4, v3));
    let x5 = subgroupBroadcast(xb, 1u);
    a5 += vec4<f32>(dot(x5, v0), dot(x5, v1), dot(x5, v2), dot(x5, v3));
    let x6 = subgroupBroadcast(xb, 2u);
    a6 += vec4<f32>(dot(x6, v0), dot(x6, v1), dot(x6, v2), dot(x6, v3));
    let x7 = subgroupBroadcast(xb, 3u);
    a7 += vec4<f32>(dot(x7, v0), dot(x7, v1), dot(x7, v2), dot(x7, v3));
    let x8 = subgroupBroadcast(xc, 0u);
    a8 += vec4<f32>(dot(x8, v0), dot(x8, v1), dot(x8, v2), dot(x8, v3));
    let x9 = subgroupBroadcast(xc, 1u);
    a9 += vec4<f32>(dot(x9, v0), dot(x9, v1), dot(x9, v2), dot(x9, v3));
    let x10 = subgroupBroadcast(xc, 2u);
    a10 += vec4<f32>(dot(x10, v0), dot(x10, v1), dot(x10, v2), dot(x10, v3));
    let x11 = subgroupBroadcast(xc, 3u);
    a11 += vec4<f32>(dot(x11, v0), dot(x11, v1), dot(x11, v2), dot(x11, v3));
    let x12 = subgroupBroadcast(xd, 0u);
    a12 += vec4<f32>(dot(x12, v0), dot(x12, v1), dot(x12, v2), dot(x12, v3));
    let x13 = subgroupBroadcast(xd, 1u);
    a13 += vec4<f32>(dot(x13, v0), dot(x13, v1), dot(x13, v2), dot(x13, v3));
    let x14 = subgroupBroadcast(xd, 2u);
    a14 += vec4<f32>(dot(x14, v0), dot(x14, v1), dot(x14, v2), dot(x14, v3));
    let x15 = subgroupBroadcast(xd, 3u);
    a15 += vec4<f32>(dot(x15, v0), dot(x15, v1), dot(x15, v2), dot(x15, v3));
  }
  var scale = array<f32, 16>(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0);
  if (MODE == 1u) {
    scale = array<f32, 16>(
      rowScale(subgroupBroadcast(ssa, 0u)), rowScale(subgroupBroadcast(ssa, 1u)),
      rowScale(subgroupBroadcast(ssa, 2u)), rowScale(subgroupBroadcast(ssa, 3u)),
      rowScale(subgroupBroadcast(ssb, 0u)), rowScale(subgroupBroadcast(ssb, 1u)),
      rowScale(subgroupBroadcast(ssb, 2u)), rowScale(subgroupBroadcast(ssb, 3u)),
      rowScale(subgroupBroadcast(ssc, 0u)), rowScale(subgroupBroadcast(ssc, 1u)),
      rowScale(subgroupBroadcast(ssc, 2u)), rowScale(subgroupBroadcast(ssc, 3u)),
      rowScale(subgroupBroadcast(ssd, 0u)), rowScale(subgroupBroadcast(ssd, 1u)),
      rowScale(subgroupBroadcast(ssd, 2u)), rowScale(subgroupBroadcast(ssd, 3u)));
  }
  let acc = array<vec4<f32>, 16>(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15);
  for (var i = 0u; i < 16u; i++) {
    let r = r0 + i;
    if (r >= m) { break; }
    for (var j = 0u; j < 4u; j++) {
      if (n0 + j < P.N) { storeY(r, n0 + j, acc[i][j] * scale[i]); }
    }
  }
}
