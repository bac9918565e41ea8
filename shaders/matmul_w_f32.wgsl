// f32 weights for the kernels that read W through wLoad (matmul_regblock.wgsl): a row of W is
// P.kStride4 vec4s.
@group(0) @binding(3) var<storage, read> W: array<vec4<f32>>;

fn wLoad(i: u32) -> vec4<f32> {
  return W[i];
}
