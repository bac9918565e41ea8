// Q8_0 helpers: four int8 values packed little-endian in one u32 (value i in byte i).
fn i8x4(w: u32) -> vec4<i32> {
  // Each byte shifted to the top, then an arithmetic shift back sign-extends it.
  return bitcast<vec4<i32>>(vec4<u32>(w << 24u, w << 16u, w << 8u, w)) >> vec4<u32>(24u);
}
