// What every embedding kernel shares (embed.wgsl f32, embed_q8.wgsl, embed_q4.wgsl): y[r] =
// table[tokens[r]], one invocation per output value, for the table rows of one chunk (rowStart ..
// rowStart + rows); a table split across bindings runs one dispatch per chunk, each writing the
// rows it holds. The kernels differ only in how they read a value of a table row.
struct EmbedParams {
  dim: u32,
  rowWords: u32,  // u32/f32 words per table row (f32: dim padded to a multiple of 4; Q8_0: dim/4; Q4_0: dim/8)
  rowStart: u32,
  rows: u32,
  tokStride: u32, // u32s between rows' token ids
  tokOff: u32,
  yStride: u32,
  groupSize: u32, // values per scale of a quantised table
}

@group(0) @binding(1) var<uniform> P: EmbedParams;
@group(0) @binding(2) var<storage, read> TOK: array<u32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;

const WG = 64u;

// Output row r, value d, and the chunk's table row it copies; ok is false past the step's rows
// or when the token's row is in another chunk.
struct EmbedAt {
  r: u32,
  d: u32,
  row: u32,
  ok: bool,
}

fn embedAt(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> EmbedAt {
  let i = linearWg(wid, nwg) * WG + lid;
  let r = i / P.dim;
  let d = i % P.dim;
  if (r >= stepM()) { return EmbedAt(r, d, 0u, false); }
  let tok = TOK[P.tokOff + r * P.tokStride];
  return EmbedAt(r, d, tok - P.rowStart, tok >= P.rowStart && tok < P.rowStart + P.rows);
}
