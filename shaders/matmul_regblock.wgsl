// Prefill matmul (m > 1), register-blocked: each invocation computes a 4×4 block of y (4 rows
// of x × 4 rows of W) from 8 vec4 loads per 4 k, with no workgroup memory or barrier.
// SwiftShader runs this faster than shared-memory tiles. W's vec4s come from wLoad:
// f32 (matmul_w_f32.wgsl) or f16 halves (matmul_w_f16.wgsl, matmul_w_f16_native.wgsl), each
// load widened once for the four rows of x.
override WGX: u32 = 8u;
override WGY: u32 = 8u;

@compute @workgroup_size(WGX, WGY)
fn gemm_regblock(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_id) lid: vec3<u32>) {
  // x folds the n tiles (wid.x + wid.z·nwg.x keeps each dimension ≤ 65535); y walks m tiles.
  let nt = (wid.x + wid.z * nwg.x) * WGX + lid.x;
  let mt = wid.y * WGY + lid.y;
  let m = stepM();
  let n0 = nt * 4u;
  let r0 = mt * 4u;
  if (n0 >= P.N || r0 >= m) { return; }
  let nLast = P.N - 1u;
  let wb0 = n0 * P.kStride4;
  let wb1 = min(n0 + 1u, nLast) * P.kStride4;
  let wb2 = min(n0 + 2u, nLast) * P.kStride4;
  let wb3 = min(n0 + 3u, nLast) * P.kStride4;
  let ra = r0;
  let rb = min(r0 + 1u, m - 1u);
  let rc = min(r0 + 2u, m - 1u);
  let rd = min(r0 + 3u, m - 1u);
  var a0 = vec4<f32>(0.0);
  var a1 = vec4<f32>(0.0);
  var a2 = vec4<f32>(0.0);
  var a3 = vec4<f32>(0.0);
  var ss = vec4<f32>(0.0);
  let k4n = (P.K + 3u) / 4u;
  for (var k4 = 0u; k4 < k4n; k4++) {
    let k = k4 * 4u;
    let q0 = xRaw4(ra, k);
    let q1 = xRaw4(rb, k);
    let q2 = xRaw4(rc, k);
    let q3 = xRaw4(rd, k);
    if (MODE == 1u) { ss += vec4<f32>(dot(q0, q0), dot(q1, q1), dot(q2, q2), dot(q3, q3)); }
    let x0 = xEff4(ra, k, q0);
    let x1 = xEff4(rb, k, q1);
    let x2 = xEff4(rc, k, q2);
    let x3 = xEff4(rd, k, q3);
    let v0 = wLoad(wb0 + k4);
    let v1 = wLoad(wb1 + k4);
    let v2 = wLoad(wb2 + k4);
    let v3 = wLoad(wb3 + k4);
    a0 += vec4<f32>(dot(x0, v0), dot(x0, v1), dot(x0, v2), dot(x0, v3));
    a1 += vec4<f32>(dot(x1, v0), dot(x1, v1), dot(x1, v2), dot(x1, v3));
    a2 += vec4<f32>(dot(x2, v0), dot(x2, v1), dot(x2, v2), dot(x2, v3));
    a3 += vec4<f32>(dot(x3, v0), dot(x3, v1), dot(x3, v2), dot(x3, v3));
  }
  let acc = array<vec4<f32>, 4>(a0, a1, a2, a3);
  for (var i = 0u; i < 4u; i++) {
    let r = r0 + i;
    if (r >= m) { break; }
    let s = rowScale(ss[i]);
    for (var j = 0u; j < 4u; j++) {
      if (n0 + j < P.N) { storeY(r, n0 + j, acc[i][j] * s); }
    }
  }
}
