// Weight-only Q8_0 matmul (f32 activations): y = xin · Wᵀ with W dequantised in the kernel,
// w = q · scale of its group, exactly runq.c's `dequantize`. Composed with matmul_common.wgsl
// and an x loader, so the fused RMSNorm and SiLU·mul inputs work as for f32 weights.
// The weights' bindings and `wq4(row, k4)` (W[row][4·k4 .. 4·k4+3], dequantised) come from
// q8_weights.wgsl (Q8_0) or q8m_weights.wgsl (q8_m: GGUF's Q4_1, Q5_x and K-quants).
override WG: u32 = 64u;
override WGX: u32 = 8u;
override WGY: u32 = 8u;

// m = 1: four rows of W per invocation, sharing each load (and fused transform) of x; no
// workgroup memory or barrier (barriers are what a CPU adapter such as SwiftShader pays most for).
@compute @workgroup_size(WG)
fn gemv_q8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) tid: u32) {
  let n0 = (linearWg(wid, nwg) * WG + tid) * 4u;
  if (n0 >= P.N) { return; }
  let nLast = P.N - 1u;
  let r1 = min(n0 + 1u, nLast);
  let r2 = min(n0 + 2u, nLast);
  let r3 = min(n0 + 3u, nLast);
  let k4n = P.K / 4u;
  var acc = vec4<f32>(0.0);
  var ss = 0.0;
  for (var k4 = 0u; k4 < k4n; k4++) {
    let raw = xRaw4(0u, k4 * 4u);
    if (MODE == 1u) { ss += dot(raw, raw); }
    let x = xEff4(0u, k4 * 4u, raw);
    acc += vec4<f32>(dot(wq4(n0, k4), x), dot(wq4(r1, k4), x), dot(wq4(r2, k4), x), dot(wq4(r3, k4), x));
  }
  let scale = rowScale(ss);
  for (var j = 0u; j < 4u; j++) {
    if (n0 + j < P.N) { storeY(0u, n0 + j, acc[j] * scale); }
  }
}

// m > 1: a 4×4 register block per invocation (4 rows of x × 4 rows of W), as gemm_regblock.
@compute @workgroup_size(WGX, WGY)
fn gemm_q8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_id) lid: vec3<u32>) {
  let nt = (wid.x + wid.z * nwg.x) * WGX + lid.x;
  let mt = wid.y * WGY + lid.y;
  let m = stepM();
  let n0 = nt * 4u;
  let r0 = mt * 4u;
  if (n0 >= P.N || r0 >= m) { return; }
  let nLast = P.N - 1u;
  let wb0 = n0;
  let wb1 = min(n0 + 1u, nLast);
  let wb2 = min(n0 + 2u, nLast);
  let wb3 = min(n0 + 3u, nLast);
  let ra = r0;
  let rb = min(r0 + 1u, m - 1u);
  let rc = min(r0 + 2u, m - 1u);
  let rd = min(r0 + 3u, m - 1u);
  var a0 = vec4<f32>(0.0);
  var a1 = vec4<f32>(0.0);
  var a2 = vec4<f32>(0.0);
  var a3 = vec4<f32>(0.0);
  var ss = vec4<f32>(0.0);
  let k4n = P.K / 4u;
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
    let v0 = wq4(wb0, k4);
    let v1 = wq4(wb1, k4);
    let v2 = wq4(wb2, k4);
    let v3 = wq4(wb3, k4);
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
