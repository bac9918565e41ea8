// Weight-only Q4_0 matmul (f32 activations): y = xin · Wᵀ with W dequantised in the kernel,
// w = (nibble − 8) · scale of its group of 32 (GGML's Q4_0). Composed with matmul_common.wgsl
// and an x loader, so the fused RMSNorm and SiLU·mul inputs work as for f32 weights.
// WQ: a chunk's rows of K nibbles, K/8 words each (P.kStride4 = K/8); WS: K/32 scales per row.
// Word w (0..3) of a group holds elements 4w..4w+3 in the low nibbles of its bytes and
// 16+4w..16+4w+3 in the high nibbles.
@group(0) @binding(3) var<storage, read> WQ: array<u32>;
@group(0) @binding(7) var<storage, read> WS: array<f32>;
override WG: u32 = 64u;
override WGX: u32 = 8u;
override WGY: u32 = 8u;

// Masking a word in place leaves nibble j of the low (high) half as q · 256^j (q · 16 · 256^j),
// exact in f32; multiplying x by the inverse powers of two instead of shifting each nibble down
// saves the shifts, and the products are the same floats.
const LO_MASK = vec4<u32>(0xfu, 0xf00u, 0xf0000u, 0xf000000u);
const HI_MASK = vec4<u32>(0xf0u, 0xf000u, 0xf00000u, 0xf0000000u);
const LO_UNIT = vec4<f32>(1.0, 0.00390625, 0.0000152587890625, 5.9604644775390625e-8);
const HI_UNIT = vec4<f32>(0.0625, 0.000244140625, 9.5367431640625e-7, 3.725290298461914e-9);

// Σ nibble · x over one word, x given pre-multiplied by LO_UNIT (elements 4w..) and HI_UNIT (16+4w..).
fn nibDot(w: u32, xl: vec4<f32>, xh: vec4<f32>) -> f32 {
  let v = vec4<u32>(w);
  return dot(vec4<f32>(v & LO_MASK), xl) + dot(vec4<f32>(v & HI_MASK), xh);
}

// m = 1: four rows of W per invocation, sharing each load (and fused transform) of x; no
// workgroup memory or barrier (barriers are what a CPU adapter such as SwiftShader pays most for).
// A group's dot product is Σ nibble · x − 8 · Σ x, scaled once: the −8 is paid per group of x,
// shared by the four rows, not per weight.
@compute @workgroup_size(WG)
fn gemv_q4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) tid: u32) {
  let n0 = (linearWg(wid, nwg) * WG + tid) * 4u;
  if (n0 >= P.N) { return; }
  let nLast = P.N - 1u;
  let r1 = min(n0 + 1u, nLast);
  let r2 = min(n0 + 2u, nLast);
  let r3 = min(n0 + 3u, nLast);
  let kw = P.kStride4;
  let gpr = P.K / 32u;
  var acc = vec4<f32>(0.0);
  var ss = 0.0;
  for (var g = 0u; g < gpr; g++) {
    var d = vec4<f32>(0.0);
    var sx = vec4<f32>(0.0);
    for (var w = 0u; w < 4u; w++) {
      let k = g * 32u + w * 4u;
      let rl = xRaw4(0u, k);
      let rh = xRaw4(0u, k + 16u);
      if (MODE == 1u) { ss += dot(rl, rl) + dot(rh, rh); }
      let xl = xEff4(0u, k, rl);
      let xh = xEff4(0u, k + 16u, rh);
      sx += xl + xh;
      let pl = xl * LO_UNIT;
      let ph = xh * HI_UNIT;
      let o = g * 4u + w;
      d += vec4<f32>(nibDot(WQ[n0 * kw + o], pl, ph), nibDot(WQ[r1 * kw + o], pl, ph),
                     nibDot(WQ[r2 * kw + o], pl, ph), nibDot(WQ[r3 * kw + o], pl, ph));
    }
    let s = vec4<f32>(WS[n0 * gpr + g], WS[r1 * gpr + g], WS[r2 * gpr + g], WS[r3 * gpr + g]);
    acc += (d - 8.0 * dot(sx, vec4<f32>(1.0))) * s;
  }
  let scale = rowScale(ss);
  for (var j = 0u; j < 4u; j++) {
    if (n0 + j < P.N) { storeY(0u, n0 + j, acc[j] * scale); }
  }
}

// The low (elements 4w..4w+3) or high (16+4w..) values of word w of a row, dequantised; `su`
// is the group's scale times LO_UNIT or HI_UNIT, `sb` = −8 · scale.
fn deq(v: vec4<u32>, mask: vec4<u32>, su: vec4<f32>, sb: f32) -> vec4<f32> {
  return vec4<f32>(v & mask) * su + sb;
}

// m > 1: a 4×4 register block per invocation (4 rows of x × 4 rows of W), as gemm_regblock;
// each word of W is dequantised once for the four rows of x.
@compute @workgroup_size(WGX, WGY)
fn gemm_q4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_id) lid: vec3<u32>) {
  let nt = (wid.x + wid.z * nwg.x) * WGX + lid.x;
  let mt = wid.y * WGY + lid.y;
  let m = stepM();
  let n0 = nt * 4u;
  let r0 = mt * 4u;
  if (n0 >= P.N || r0 >= m) { return; }
  let nLast = P.N - 1u;
  let wr = vec4<u32>(n0, min(n0 + 1u, nLast), min(n0 + 2u, nLast), min(n0 + 3u, nLast));
  let ra = r0;
  let rb = min(r0 + 1u, m - 1u);
  let rc = min(r0 + 2u, m - 1u);
  let rd = min(r0 + 3u, m - 1u);
  var a0 = vec4<f32>(0.0);
  var a1 = vec4<f32>(0.0);
  var a2 = vec4<f32>(0.0);
  var a3 = vec4<f32>(0.0);
  var ss = vec4<f32>(0.0);
  let kw = P.kStride4;
  let gpr = P.K / 32u;
  for (var g = 0u; g < gpr; g++) {
    let s = vec4<f32>(WS[wr.x * gpr + g], WS[wr.y * gpr + g], WS[wr.z * gpr + g], WS[wr.w * gpr + g]);
    for (var w = 0u; w < 4u; w++) {
      for (var hi = 0u; hi < 2u; hi++) {
        let k = g * 32u + hi * 16u + w * 4u;
        let q0 = xRaw4(ra, k);
        let q1 = xRaw4(rb, k);
        let q2 = xRaw4(rc, k);
        let q3 = xRaw4(rd, k);
        if (MODE == 1u) { ss += vec4<f32>(dot(q0, q0), dot(q1, q1), dot(q2, q2), dot(q3, q3)); }
        let x0 = xEff4(ra, k, q0);
        let x1 = xEff4(rb, k, q1);
        let x2 = xEff4(rc, k, q2);
        let x3 = xEff4(rd, k, q3);
        let mask = select(LO_MASK, HI_MASK, hi == 1u);
        let unit = select(LO_UNIT, HI_UNIT, hi == 1u);
        let o = g * 4u + w;
        let v0 = deq(vec4<u32>(WQ[wr.x * kw + o]), mask, s.x * unit, -8.0 * s.x);
        let v1 = deq(vec4<u32>(WQ[wr.y * kw + o]), mask, s.y * unit, -8.0 * s.y);
        let v2 = deq(vec4<u32>(WQ[wr.z * kw + o]), mask, s.z * unit, -8.0 * s.z);
        let v3 = deq(vec4<u32>(WQ[wr.w * kw + o]), mask, s.w * unit, -8.0 * s.w);
        a0 += vec4<f32>(dot(x0, v0), dot(x0, v1), dot(x0, v2), dot(x0, v3));
        a1 += vec4<f32>(dot(x1, v0), dot(x1, v1), dot(x1, v2), dot(x1, v3));
        a2 += vec4<f32>(dot(x2, v0), dot(x2, v1), dot(x2, v2), dot(x2, v3));
        a3 += vec4<f32>(dot(x3, v0), dot(x3, v1), dot(x3, v2), dot(x3, v3));
      }
    }
  }
  let acc = array<vec4<f32>, 4>(a0, a1, a2, a3);
  for (var i = 0u; i < 4u; i++) {
    let r = r0 + i;
    if (r >= m) { break; }
    let sc = rowScale(ss[i]);
    for (var j = 0u; j < 4u; j++) {
      if (n0 + j < P.N) { storeY(r, n0 + j, acc[i][j] * sc); }
    }
  }
}
