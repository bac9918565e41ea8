// f16 weights read from their packed storage, two halves per u32 (core WGSL: no shader-f16
// needed, so this runs on every adapter). A row of W is stored as P.kStride4 vec2<u32>, four
// halves each (the row zero-padded to a multiple of 4); unpack2x16float is exact, so the
// kernels see the halves' exact f32 values.
@group(0) @binding(3) var<storage, read> W: array<vec2<u32>>;

// Halves 4i..4i+3 of the chunk (i = row · kStride4 + k/4), as f32.
fn wLoad(i: u32) -> vec4<f32> {
  let v = W[i];
  return vec4<f32>(unpack2x16float(v.x), unpack2x16float(v.y));
}
