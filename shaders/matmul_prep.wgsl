enable subgroups;
// The effective input of a decode matmul, once: Y[r][k] = xin[r][k] (see MODE in
// matmul_common.wgsl) for r < m, and for MODE 1 Y[P.N + r] = 1/rms of x's row r. The small-m
// kernels then read plain rows instead of each of their many workgroups redoing the norm's
// weight loads or SiLU's exp for every k (for the classifier, ~1000 times over).
// One 4-lane workgroup per row; P.yStride is Y's row stride.
@compute @workgroup_size(4)
fn matmul_prep(@builtin(workgroup_id) wid: vec3<u32>, @builtin(subgroup_invocation_id) lane: u32) {
  let r = wid.x;
  if (r >= stepM()) { return; }
  var ss = 0.0;
  for (var k = lane; k < P.K; k += 4u) {
    let raw = xRaw1(r, k);
    ss += raw * raw;
    Y[r * P.yStride + k] = xEff1(r, k, raw);
  }
  if (MODE == 1u) {
    let s = rowScale(subgroupAdd(ss));
    if (lane == 0u) { Y[P.N + r] = s; }
  }
}
