// W8A8 Q8_0 matmul, runq.c's `matmul`: y[r][n] = Σ over groups g, of
// (f32)(Σ_{k in g} xq[r][k]·wq[n][k] as i32) · ws[n][g] · xs[r][g]. The int8 products of a
// group are summed exactly in i32, so only the f32 sum over groups depends on the order.
// XQ/XS come from quantize_q8.wgsl (K/4 words and K/GS scales per row); WQ/WS are a chunk's
// rows of W (P.kStride4 = K/4 words per row).
// CONTINUE: the sum starts from Y's value instead of 0, so a row-parallel matmul whose
// columns are split over ranks can carry on the sum an earlier rank began, group after group
// exactly as runq.c's one loop over all of them (ACCUMULATE would add Y after the sum instead).
struct Q8Params {
  K: u32,
  N: u32,        // rows of W in this chunk
  kStride4: u32, // words per W row
  rowStart: u32, // first output column of this chunk
  yStride: u32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(1) var<uniform> P: Q8Params;
@group(0) @binding(2) var<storage, read> XQ: array<u32>;
@group(0) @binding(3) var<storage, read> WQ: array<u32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
@group(0) @binding(5) var<storage, read> BIAS: array<f32>;
@group(0) @binding(6) var<storage, read> XS: array<f32>;
@group(0) @binding(7) var<storage, read> WS: array<f32>;

override WG: u32 = 64u;
override GS: u32 = 32u;
override WGX: u32 = 8u;
override WGY: u32 = 8u;
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;
override CONTINUE: bool = false;


fn storeY(r: u32, n: u32, v: f32) {
  var out = v;
  if (HAS_BIAS) { out += BIAS[P.rowStart + n]; }
  let i = r * P.yStride + P.rowStart + n;
  if (ACCUMULATE) { out += Y[i]; }
  Y[i] = out;
}

// The i32 dot products of x row `xr`'s group g with W rows w0..w3 (word indices of their group).
fn groupDot(xw: u32, w0: u32, w1: u32, w2: u32, w3: u32) -> vec4<i32> {
  var acc = vec4<i32>(0);
  for (var j = 0u; j < GS / 4u; j++) {
    let x = i8x4(XQ[xw + j]);
    acc += vec4<i32>(dot(x, i8x4(WQ[w0 + j])), dot(x, i8x4(WQ[w1 + j])), dot(x, i8x4(WQ[w2 + j])), dot(x, i8x4(WQ[w3 + j])));
  }
  return acc;
}

// m = 1: one row of W per invocation, its groups summed in order as runq.c does; no
// workgroup memory or barrier.
@compute @workgroup_size(WG)
fn gemv_q8a8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) tid: u32) {
  let n = linearWg(wid, nwg) * WG + tid;
  if (n >= P.N) { return; }
  let nG = P.K / GS;
  let wpg = GS / 4u;
  var acc = 0.0;
  if (CONTINUE) { acc = Y[P.rowStart + n]; }
  for (var g = 0u; g < nG; g++) {
    var isum = 0;
    for (var j = 0u; j < wpg; j++) { isum += dot(i8x4(XQ[g * wpg + j]), i8x4(WQ[n * P.kStride4 + g * wpg + j])); }
    acc += (f32(isum) * WS[n * nG + g]) * XS[g];
  }
  storeY(0u, n, acc);
}

// m > 1: 4 rows of x × 4 rows of W per invocation, groups in order (runq.c's order per output).
@compute @workgroup_size(WGX, WGY)
fn gemm_q8a8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_id) lid: vec3<u32>) {
  let nt = (wid.x + wid.z * nwg.x) * WGX + lid.x;
  let mt = wid.y * WGY + lid.y;
  let m = stepM();
  let n0 = nt * 4u;
  let r0 = mt * 4u;
  if (n0 >= P.N || r0 >= m) { return; }
  let nLast = P.N - 1u;
  let rows = vec4<u32>(n0, min(n0 + 1u, nLast), min(n0 + 2u, nLast), min(n0 + 3u, nLast));
  let xr = vec4<u32>(r0, min(r0 + 1u, m - 1u), min(r0 + 2u, m - 1u), min(r0 + 3u, m - 1u));
  let nG = P.K / GS;
  let wpg = GS / 4u;
  let xrow = P.K / 4u;
  var acc = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
  if (CONTINUE) {
    // Clamped rows and columns read valid entries that are never stored.
    for (var i = 0u; i < 4u; i++) {
      let y = xr[i] * P.yStride + P.rowStart;
      acc[i] = vec4<f32>(Y[y + rows.x], Y[y + rows.y], Y[y + rows.z], Y[y + rows.w]);
    }
  }
  for (var g = 0u; g < nG; g++) {
    let w = rows * P.kStride4 + g * wpg;
    let ws = vec4<f32>(WS[rows.x * nG + g], WS[rows.y * nG + g], WS[rows.z * nG + g], WS[rows.w * nG + g]);
    for (var i = 0u; i < 4u; i++) {
      let isum = groupDot(xr[i] * xrow + g * wpg, w.x, w.y, w.z, w.w);
      acc[i] += (vec4<f32>(isum) * ws) * XS[xr[i] * nG + g];
    }
  }
  for (var i = 0u; i < 4u; i++) {
    let r = r0 + i;
    if (r >= m) { break; }
    for (var j = 0u; j < 4u; j++) {
      if (n0 + j < P.N) { storeY(r, n0 + j, acc[i][j]); }
    }
  }
}
