// Decode matmul (m = 1): memory-bound, so the point is streaming W once with vec4 loads.
// Each workgroup owns 4 consecutive rows of W (the vec4 `acc` holds their partial sums) and
// splits K across its WG invocations; x is loaded once per k and reused for the 4 rows.
// The partial sums meet through workgroup memory.
@group(0) @binding(3) var<storage, read> W: array<vec4<f32>>;
override WG: u32 = 64u;

var<workgroup> red: array<vec4<f32>, WG>;
var<workgroup> redSs: array<f32, WG>;

@compute @workgroup_size(WG)
fn gemv_wg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) tid: u32) {
  let n0 = linearWg(wid, nwg) * 4u;
  // Clamped rows keep the loop branch-free; their sums are dropped at the store.
  let nLast = P.N - 1u;
  let w0 = min(n0, nLast) * P.kStride4;
  let w1 = min(n0 + 1u, nLast) * P.kStride4;
  let w2 = min(n0 + 2u, nLast) * P.kStride4;
  let w3 = min(n0 + 3u, nLast) * P.kStride4;
  let k4n = (P.K + 3u) / 4u;
  var acc = vec4<f32>(0.0);
  var ss = 0.0;
  for (var k4 = tid; k4 < k4n; k4 += WG) {
    let raw = xRaw4(0u, k4 * 4u);
    if (MODE == 1u) { ss += dot(raw, raw); }
    let x = xEff4(0u, k4 * 4u, raw);
    acc += vec4<f32>(dot(W[w0 + k4], x), dot(W[w1 + k4], x), dot(W[w2 + k4], x), dot(W[w3 + k4], x));
  }
  red[tid] = acc;
  if (MODE == 1u) { redSs[tid] = ss; }
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) {
      red[tid] += red[tid + s];
      if (MODE == 1u) { redSs[tid] += redSs[tid + s]; }
    }
    workgroupBarrier();
  }
  if (tid < 4u && n0 + tid < P.N) {
    var scale = 1.0;
    if (MODE == 1u) { scale = rowScale(redSs[0]); }
    storeY(0u, n0 + tid, red[0][tid] * scale);
  }
}
