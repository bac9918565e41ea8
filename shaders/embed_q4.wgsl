// y[r] = dequantised Q4_0 table row tokens[r] ((nibble − 8) · scale), for the rows of one chunk of
// the table (as embed.wgsl). Element e of a group of 32 is in byte e % 16 of the group's 16, the
// low nibble for e < 16 and the high one for e ≥ 16.
struct EmbedParams {
  dim: u32,
  wordsPerRow: u32, // dim / 8
  rowStart: u32,
  rows: u32,
  tokStride: u32,
  tokOff: u32,
  yStride: u32,
  _p: u32,
}

@group(0) @binding(1) var<uniform> P: EmbedParams;
@group(0) @binding(2) var<storage, read> TOK: array<u32>;
@group(0) @binding(3) var<storage, read> TQ: array<u32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
@group(0) @binding(5) var<storage, read> TS: array<f32>;

const WG = 64u;

@compute @workgroup_size(WG)
fn embed_q4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  let i = linearWg(wid, nwg) * WG + lid;
  let r = i / P.dim;
  let d = i % P.dim;
  if (r >= stepM()) { return; }
  let tok = TOK[P.tokOff + r * P.tokStride];
  if (tok < P.rowStart || tok >= P.rowStart + P.rows) { return; }
  let row = tok - P.rowStart;
  let e = d % 32u;
  let word = TQ[row * P.wordsPerRow + (d / 32u) * 4u + (e % 16u) / 4u];
  let q = (word >> ((e % 4u) * 8u + (e / 16u) * 4u)) & 0xfu;
  Y[r * P.yStride + d] = (f32(q) - 8.0) * TS[row * (P.dim / 32u) + d / 32u];
}
