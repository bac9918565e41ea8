// y[r] = dequantised Q8_0 table row tokens[r] (q · scale, runq.c's `dequantize`), for the rows of
// one chunk of the table (as embed.wgsl).
struct EmbedParams {
  dim: u32,
  wordsPerRow: u32, // dim / 4
  rowStart: u32,
  rows: u32,
  tokStride: u32,
  tokOff: u32,
  yStride: u32,
  groupSize: u32,
}

@group(0) @binding(1) var<uniform> P: EmbedParams;
@group(0) @binding(2) var<storage, read> TOK: array<u32>;
@group(0) @binding(3) var<storage, read> TQ: array<u32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
@group(0) @binding(5) var<storage, read> TS: array<f32>;

const WG = 64u;

@compute @workgroup_size(WG)
fn embed_q8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  let i = linearWg(wid, nwg) * WG + lid;
  let r = i / P.dim;
  let d = i % P.dim;
  if (r >= stepM()) { return; }
  let tok = TOK[P.tokOff + r * P.tokStride];
  if (tok < P.rowStart || tok >= P.rowStart + P.rows) { return; }
  let row = tok - P.rowStart;
  let q = i8x4(TQ[row * P.wordsPerRow + d / 4u])[d % 4u];
  Y[r * P.yStride + d] = f32(q) * TS[row * (P.dim / P.groupSize) + d / P.groupSize];
}
