// Rotary position embedding (the helpers rope_kv.wgsl's entry point uses) with cos/sin tables computed on the CPU in f32 (never WGSL sin/cos,
// which are only ~2^-11 accurate). TAB[pos·hs/2 + i] = (cos, sin) of frequency i at pos.
// STYLE 0 (interleaved, llama2.c) rotates pairs (2i, 2i+1); STYLE 1 (rotate_half, HF) rotates
// (i, i + hs/2); both use table entry i.
struct RopeParams {
  nHeads: u32,    // query heads
  nKv: u32,
  hs: u32,
  rowStride: u32, // floats between rows of the activation buffer
  qOff: u32,      // first float of the q heads in a row
  kOff: u32,
  vOff: u32,
  maxSeq: u32,
}

@group(0) @binding(1) var<uniform> P: RopeParams;
@group(0) @binding(2) var<storage, read_write> X: array<f32>;
@group(0) @binding(3) var<storage, read> TAB: array<vec2<f32>>;

override STYLE: u32 = 0u;
const WG = 64u;

// Float offsets (within a head) of the two elements of pair i.
fn pairOf(i: u32) -> vec2<u32> {
  if (STYLE == 0u) { return vec2<u32>(2u * i, 2u * i + 1u); }
  return vec2<u32>(i, i + P.hs / 2u);
}

fn rotate(v: vec2<f32>, cs: vec2<f32>) -> vec2<f32> {
  return vec2<f32>(v.x * cs.x - v.y * cs.y, v.x * cs.y + v.y * cs.x);
}
