// The parameters and bindings the attention kernels share (src/gpu/kernels/attention.ts fills them).
// The caches, KC (binding 3) and VC (binding 4), and their readers kAt/vAt come from
// src/gpu/kernels/kv-format.ts, for the cache's format.
struct AttnParams {
  nHeads: u32,
  nKv: u32,
  hs: u32,
  maxSeq: u32,
  qStride: u32,
  qOff: u32,
  outStride: u32,
  outOff: u32,
  scale: f32,     // sqrt(hs), rounded to f32 on the CPU; scores are divided by it like run.c
  kvMul: u32,     // query heads per kv head (the model's, not the rank's)
  headOff: u32,   // the rank's first query head minus kvMul × its first kv head (uneven splits)
  _p2: u32,
}

@group(0) @binding(1) var<uniform> P: AttnParams;
@group(0) @binding(2) var<storage, read> Q: array<f32>;
@group(0) @binding(5) var<storage, read_write> OUT: array<f32>;
