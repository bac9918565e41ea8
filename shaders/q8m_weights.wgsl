// q8_m weights for matmul_q8.wgsl (GGUF's Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K): WQ a chunk's rows
// of K byte codes (K/4 words each, P.kStride4 = K/4); WS K/GS (scale, min) pairs per row. A value
// is code · scale + min: the product is exact in f32, so its one rounding is ggml's.
@group(0) @binding(3) var<storage, read> WQ: array<u32>;
@group(0) @binding(7) var<storage, read> WS: array<vec2<f32>>;
override GS: u32 = 32u;

fn wq4(row: u32, k4: u32) -> vec4<f32> {
  let w = WQ[row * P.kStride4 + k4];
  let sm = WS[row * (P.K / GS) + (k4 * 4u) / GS];
  let codes = vec4<f32>(vec4<u32>(w & 0xffu, (w >> 8u) & 0xffu, (w >> 16u) & 0xffu, w >> 24u));
  return codes * sm.x + vec4<f32>(sm.y);
}
