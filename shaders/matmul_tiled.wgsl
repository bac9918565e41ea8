// Prefill matmul (m > 1) with shared-memory tiles, the usual winner on real GPUs: a workgroup
// of 8×8 invocations computes a 32×32 block of y, each invocation a 4×4 sub-block, staging
// 32×TK slabs of xin and W in workgroup memory.
@group(0) @binding(3) var<storage, read> W: array<vec4<f32>>;
const TM = 32u;
const TN = 32u;
const TK = 32u;

var<workgroup> xs: array<vec4<f32>, 256>;   // [TM][TK/4]
var<workgroup> ws: array<vec4<f32>, 256>;   // [TN][TK/4]
var<workgroup> rowSs: array<f32, 64>;

@compute @workgroup_size(8, 8)
fn gemm_tiled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_id) lid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let nBase = (wid.x + wid.z * nwg.x) * TN;
  let mBase = wid.y * TM;
  let m = stepM();
  let nLast = P.N - 1u;
  // Whole-workgroup early exit is uniform (depends on workgroup id and uniforms only).
  if (nBase >= P.N || mBase >= m) { return; }
  let k4n = (P.K + 3u) / 4u;

  // MODE 1 needs each row's Σx² before the scale: two invocations per row, then combine.
  if (MODE == 1u) {
    let r = min(mBase + tid / 2u, m - 1u);
    var s = 0.0;
    for (var k4 = tid % 2u; k4 < k4n; k4 += 2u) {
      let q = xRaw4(r, k4 * 4u);
      s += dot(q, q);
    }
    rowSs[tid] = s;
  }

  var acc: array<vec4<f32>, 4>;
  for (var i = 0u; i < 4u; i++) { acc[i] = vec4<f32>(0.0); }
  for (var kt = 0u; kt < k4n; kt += TK / 4u) {
    // 256 vec4 per slab, 64 invocations: 4 each. Slab index e → (row e / 8, k4 e % 8).
    for (var e = tid; e < 256u; e += 64u) {
      let row = e / 8u;
      let k4 = kt + e % 8u;
      let r = min(mBase + row, m - 1u);
      let n = min(nBase + row, nLast);
      if (k4 < k4n) {
        xs[e] = xEff4(r, k4 * 4u, xRaw4(r, k4 * 4u));
        ws[e] = W[n * P.kStride4 + k4];
      } else {
        xs[e] = vec4<f32>(0.0);
        ws[e] = vec4<f32>(0.0);
      }
    }
    workgroupBarrier();
    for (var kk = 0u; kk < 8u; kk++) {
      let w0 = ws[(lid.x * 4u + 0u) * 8u + kk];
      let w1 = ws[(lid.x * 4u + 1u) * 8u + kk];
      let w2 = ws[(lid.x * 4u + 2u) * 8u + kk];
      let w3 = ws[(lid.x * 4u + 3u) * 8u + kk];
      for (var i = 0u; i < 4u; i++) {
        let x = xs[(lid.y * 4u + i) * 8u + kk];
        acc[i] += vec4<f32>(dot(x, w0), dot(x, w1), dot(x, w2), dot(x, w3));
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let rl = lid.y * 4u + i;
    let r = mBase + rl;
    if (r >= m) { break; }
    var s = 1.0;
    if (MODE == 1u) { s = rowScale(rowSs[2u * rl] + rowSs[2u * rl + 1u]); }
    for (var j = 0u; j < 4u; j++) {
      let n = nBase + lid.x * 4u + j;
      if (n < P.N) { storeY(r, n, acc[i][j] * s); }
    }
  }
}
