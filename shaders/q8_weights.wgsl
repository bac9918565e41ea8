// Q8_0 weights for matmul_q8.wgsl. WQ: a chunk's rows of K int8 values (K/4 words each,
// P.kStride4 = K/4); WS: K/GS scales per row.
@group(0) @binding(3) var<storage, read> WQ: array<u32>;
@group(0) @binding(7) var<storage, read> WS: array<f32>;
override GS: u32 = 32u;

fn wq4(row: u32, k4: u32) -> vec4<f32> {
  return vec4<f32>(i8x4(WQ[row * P.kStride4 + k4])) * WS[row * (P.K / GS) + (k4 * 4u) / GS];
}
