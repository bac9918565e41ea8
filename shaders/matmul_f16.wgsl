// Matmuls with f16 weights: y = xin · Wᵀ, W's halves read by wLoad (matmul_w_f16.wgsl, packed
// in u32 words, or matmul_w_f16_native.wgsl with shader-f16), all arithmetic in f32. Composed
// with matmul_common.wgsl and an x loader, so the fused RMSNorm and SiLU·mul inputs, bias and
// accumulate work as for f32 weights. P.kStride4: a row's stride in groups of 4 halves.
// m > 1 runs matmul_regblock.wgsl's gemm_regblock over the same wLoad.
override WG: u32 = 64u;

// m = 1: four rows of W per invocation over the whole of K, sharing each load (and fused
// transform) of x; no workgroup memory or barrier (what a CPU adapter such as SwiftShader pays
// most for), as the Q4_0 gemv.
@compute @workgroup_size(WG)
fn gemv_f16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) tid: u32) {
  let n0 = (linearWg(wid, nwg) * WG + tid) * 4u;
  if (n0 >= P.N) { return; }
  let nLast = P.N - 1u;
  let w0 = n0 * P.kStride4;
  let w1 = min(n0 + 1u, nLast) * P.kStride4;
  let w2 = min(n0 + 2u, nLast) * P.kStride4;
  let w3 = min(n0 + 3u, nLast) * P.kStride4;
  let k4n = (P.K + 3u) / 4u;
  var acc = vec4<f32>(0.0);
  var ss = 0.0;
  for (var k4 = 0u; k4 < k4n; k4++) {
    let raw = xRaw4(0u, k4 * 4u);
    if (MODE == 1u) { ss += dot(raw, raw); }
    let x = xEff4(0u, k4 * 4u, raw);
    acc += vec4<f32>(dot(wLoad(w0 + k4), x), dot(wLoad(w1 + k4), x), dot(wLoad(w2 + k4), x), dot(wLoad(w3 + k4), x));
  }
  let scale = rowScale(ss);
  for (var j = 0u; j < 4u; j++) {
    if (n0 + j < P.N) { storeY(0u, n0 + j, acc[j] * scale); }
  }
}
