enable subgroups;
// Matmul variants for adapters that load fastest when adjacent invocations read adjacent
// floats. SwiftShader turns such a load into one SIMD load, but splits a per-invocation vec4
// load into 16 scalar loads; so here each subgroup owns a block of outputs and its lanes split
// K (lane l takes k ≡ l mod subgroup size), and one subgroupAdd per output finishes the sum.
@group(0) @binding(3) var<storage, read> W: array<f32>;

override WG: u32 = 64u;

// m = 1: each subgroup owns 4 rows of W.
@compute @workgroup_size(WG)
fn gemv_seq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(subgroup_id) sid: u32, @builtin(num_subgroups) nsg: u32,
            @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgs: u32) {
  let n0 = (linearWg(wid, nwg) * nsg + sid) * 4u;
  if (n0 >= P.N) { return; }
  let nLast = P.N - 1u;
  let ws = P.kStride4 * 4u;
  let w0 = n0 * ws;
  let w1 = min(n0 + 1u, nLast) * ws;
  let w2 = min(n0 + 2u, nLast) * ws;
  let w3 = min(n0 + 3u, nLast) * ws;
  var acc = vec4<f32>(0.0);
  var ss = 0.0;
  for (var k = lane; k < P.K; k += sgs) {
    let raw = xRaw1(0u, k);
    if (MODE == 1u) { ss += raw * raw; }
    let x = xEff1(0u, k, raw);
    acc += vec4<f32>(W[w0 + k], W[w1 + k], W[w2 + k], W[w3 + k]) * x;
  }
  acc = subgroupAdd(acc);
  var scale = 1.0;
  if (MODE == 1u) { scale = rowScale(subgroupAdd(ss)); }
  if (lane < 4u && n0 + lane < P.N) {
    storeY(0u, n0 + lane, acc[lane] * scale);
  }
}

// m > 1: each subgroup owns a 4×4 block of y; a workgroup's subgroups tile 4 blocks along n
// and WG / (4·subgroup size) blocks along m.
@compute @workgroup_size(WG)
fn gemm_seq(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(subgroup_id) sid: u32,
            @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgs: u32) {
  let n0 = ((wid.x + wid.z * nwg.x) * 4u + sid % 4u) * 4u;
  let r0 = (wid.y * (WG / (4u * sgs)) + sid / 4u) * 4u;
  let m = stepM();
  if (n0 >= P.N || r0 >= m) { return; }
  let nLast = P.N - 1u;
  let ws = P.kStride4 * 4u;
  let wb0 = n0 * ws;
  let wb1 = min(n0 + 1u, nLast) * ws;
  let wb2 = min(n0 + 2u, nLast) * ws;
  let wb3 = min(n0 + 3u, nLast) * ws;
  let ra = r0;
  let rb = min(r0 + 1u, m - 1u);
  let rc = min(r0 + 2u, m - 1u);
  let rd = min(r0 + 3u, m - 1u);
  var a0 = vec4<f32>(0.0);
  var a1 = vec4<f32>(0.0);
  var a2 = vec4<f32>(0.0);
  var a3 = vec4<f32>(0.0);
  var ss = vec4<f32>(0.0);
  for (var k = lane; k < P.K; k += sgs) {
    let q = vec4<f32>(xRaw1(ra, k), xRaw1(rb, k), xRaw1(rc, k), xRaw1(rd, k));
    if (MODE == 1u) { ss += q * q; }
    let w = vec4<f32>(W[wb0 + k], W[wb1 + k], W[wb2 + k], W[wb3 + k]);
    a0 += w * xEff1(ra, k, q.x);
    a1 += w * xEff1(rb, k, q.y);
    a2 += w * xEff1(rc, k, q.z);
    a3 += w * xEff1(rd, k, q.w);
  }
  let acc = array<vec4<f32>, 4>(subgroupAdd(a0), subgroupAdd(a1), subgroupAdd(a2), subgroupAdd(a3));
  var scale = vec4<f32>(1.0);
  if (MODE == 1u) {
    let t = subgroupAdd(ss);
    scale = vec4<f32>(rowScale(t.x), rowScale(t.y), rowScale(t.z), rowScale(t.w));
  }
  if (lane < 4u && n0 + lane < P.N) {
    for (var i = 0u; i < 4u; i++) {
      if (r0 + i < m) { storeY(r0 + i, n0 + lane, acc[i][lane] * scale[i]); }
    }
  }
}
