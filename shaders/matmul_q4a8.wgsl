// W4A8 Q4_0 matmul (llama.cpp's CPU Q4_0 × Q8_0 arithmetic): y[r][n] = Σ over groups g, in order,
// of ((f32)(Σ_{k in g} xq[r][k]·(nibble[n][k] − 8) as i32) · ws[n][g]) · xs[r][g] — runq.c's
// W8A8 sum with Q4_0 weights, so its oracle is reference-q8.ts on q4ToQ8 of the weights.
// XQ/XS come from quantize_q8.wgsl with PAIRS (16 words and (scale, Σ xq) per group of 32).
// WQ: a chunk's rows, one vec4 (4 words, GGML's 16 bytes) per group; WS: K/32 scales per row.
//
// Why not dequantise to f32 or use dot4I8Packed: on a CPU adapter (SwiftShader) both cost about
// what the 8× smaller weight reads save. Here one u32 multiply yields a two-term dot product:
// a word masked with 0x000f000f holds two nibbles a0 + 65536·a1, and the matching x word holds
// x1 + 65536·x0 (quantize_q8.wgsl PAIRS), so bits 16..31 of the product are a0·x0 + a1·x1
// (the a1·x0 term falls off the top; a0·x1 stays below bit 16 when summed a few times).
// Summing the products of two words (16 terms) keeps |Σ a0·x1| ≤ 8·15·127 < 2^15 and
// |Σ a·x| ≤ 16·15·127 < 2^15, so the wrapped u32 sum read as i32 is exact and
// (s + 2^15) >> 16 recovers the high field. Half a group per sum, two sums per group.
struct Q4A8Params {
  K: u32,
  N: u32,        // rows of W in this chunk
  gpr: u32,      // groups of 32 per row (K/32)
  rowStart: u32, // first output column of this chunk
  yStride: u32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(1) var<uniform> P: Q4A8Params;
@group(0) @binding(2) var<storage, read> XQ: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> WQ: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
@group(0) @binding(5) var<storage, read> BIAS: array<f32>;
@group(0) @binding(6) var<storage, read> XS: array<f32>;
@group(0) @binding(7) var<storage, read> WS: array<f32>;

override WG: u32 = 16u;
override WGX: u32 = 8u;
override WGY: u32 = 8u;
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;

// Rows of W per gemv invocation, sharing each group's x words and scales.
const ROWS = 8u;

fn storeY(r: u32, n: u32, v: f32) {
  var out = v;
  if (HAS_BIAS) { out += BIAS[P.rowStart + n]; }
  let i = r * P.yStride + P.rowStart + n;
  if (ACCUMULATE) { out += Y[i]; }
  Y[i] = out;
}

// Word q of a group against its four x pair words: low nibbles of bytes 0 and 2, of bytes 1
// and 3, then the high nibbles of bytes 0 and 2 and of 1 and 3 (GGML: byte j holds elements j
// and j + 16 of the group).
fn pairDot(q: u32, x: vec4<u32>) -> u32 {
  let m = 0x000f000fu;
  return (q & m) * x.x + ((q >> 8u) & m) * x.y + ((q >> 4u) & m) * x.z + ((q >> 12u) & m) * x.w;
}

fn hi16(s: u32) -> i32 { return (bitcast<i32>(s) + 32768) >> 16u; }

// Σ (nibble − 8)·xq over one group: x0..x3 are its pair words for the group's words q.x..q.w.
fn groupDot(q: vec4<u32>, x0: vec4<u32>, x1: vec4<u32>, x2: vec4<u32>, x3: vec4<u32>, xsum: i32) -> i32 {
  return hi16(pairDot(q.x, x0) + pairDot(q.y, x1)) + hi16(pairDot(q.z, x2) + pairDot(q.w, x3)) - 8 * xsum;
}

// m = 1: ROWS rows of W per invocation, no workgroup memory or barrier. Small workgroups: a CPU
// adapter spreads workgroups over its threads, and a TP shard of a small model has few rows.
@compute @workgroup_size(WG)
fn gemv_q4a8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) tid: u32) {
  let n0 = (linearWg(wid, nwg) * WG + tid) * ROWS;
  if (n0 >= P.N) { return; }
  let nLast = P.N - 1u;
  var acc = array<f32, ROWS>();
  for (var g = 0u; g < P.gpr; g++) {
    let x0 = XQ[g * 4u];
    let x1 = XQ[g * 4u + 1u];
    let x2 = XQ[g * 4u + 2u];
    let x3 = XQ[g * 4u + 3u];
    let xs = XS[2u * g];
    let xsum = i32(XS[2u * g + 1u]);
    for (var r = 0u; r < ROWS; r++) {
      // Clamped rows read valid words whose sums are never stored.
      let row = min(n0 + r, nLast);
      let isum = groupDot(WQ[row * P.gpr + g], x0, x1, x2, x3, xsum);
      acc[r] += (f32(isum) * WS[row * P.gpr + g]) * xs;
    }
  }
  for (var r = 0u; r < ROWS; r++) {
    if (n0 + r < P.N) { storeY(0u, n0 + r, acc[r]); }
  }
}

// m > 1: 4 rows of x × 4 rows of W per invocation (as gemm_q8a8), groups in order.
@compute @workgroup_size(WGX, WGY)
fn gemm_q4a8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
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
  let gpr = P.gpr;
  var acc = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
  for (var g = 0u; g < gpr; g++) {
    let w = rows * gpr + g;
    let ws = vec4<f32>(WS[w.x], WS[w.y], WS[w.z], WS[w.w]);
    let q0 = WQ[w.x];
    let q1 = WQ[w.y];
    let q2 = WQ[w.z];
    let q3 = WQ[w.w];
    for (var i = 0u; i < 4u; i++) {
      let xg = xr[i] * gpr + g;
      let x0 = XQ[xg * 4u];
      let x1 = XQ[xg * 4u + 1u];
      let x2 = XQ[xg * 4u + 2u];
      let x3 = XQ[xg * 4u + 3u];
      let xsum = i32(XS[2u * xg + 1u]);
      let isum = vec4<i32>(groupDot(q0, x0, x1, x2, x3, xsum), groupDot(q1, x0, x1, x2, x3, xsum),
                           groupDot(q2, x0, x1, x2, x3, xsum), groupDot(q3, x0, x1, x2, x3, xsum));
      acc[i] += (vec4<f32>(isum) * ws) * XS[2u * xg];
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
