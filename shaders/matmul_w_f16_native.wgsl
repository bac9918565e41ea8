// f16 weights read as f16 (shader-f16 only): the same bytes as matmul_w_f16.wgsl's packed
// words (a vec4<f16> is 8 bytes, as a vec2<u32>), loaded as halves and widened by one vec4
// conversion instead of two unpacks. Products and sums stay f32: the fused RMSNorm scales a
// row after its dot product, so x reaches the weights unnormalised and a residual's outliers
// would lose bits (or overflow past 65504) if x were rounded to f16.
enable f16;

@group(0) @binding(3) var<storage, read> W: array<vec4<f16>>;

fn wLoad(i: u32) -> vec4<f32> {
  return vec4<f32>(W[i]);
}
