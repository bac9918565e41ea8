// y[r] = table[tokens[r]], for the table rows of one chunk (rowStart .. rowStart + rows); a
// table split across bindings runs one dispatch per chunk, each writing the rows it holds.
struct EmbedParams {
  dim: u32,
  tableStride: u32, // floats per table row (dim padded to a multiple of 4)
  rowStart: u32,
  rows: u32,
  tokStride: u32,   // u32s between rows' token ids (2 reads argmax's (index, value) pairs)
  tokOff: u32,
  yStride: u32,
  _p: u32,
}

@group(0) @binding(1) var<uniform> P: EmbedParams;
@group(0) @binding(2) var<storage, read> TOK: array<u32>;
@group(0) @binding(3) var<storage, read> T: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

const WG = 64u;

@compute @workgroup_size(WG)
fn embed(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
  let i = linearWg(wid, nwg) * WG + lid;
  let r = i / P.dim;
  let d = i % P.dim;
  if (r >= stepM()) { return; }
  let tok = TOK[P.tokOff + r * P.tokStride];
  if (tok < P.rowStart || tok >= P.rowStart + P.rows) { return; }
  Y[r * P.yStride + d] = T[(tok - P.rowStart) * P.tableStride + d];
}
