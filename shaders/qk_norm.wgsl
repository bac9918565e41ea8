// Qwen3's per-head q/k RMSNorm, in place, before RoPE: in rows holding [q heads | k heads | ...],
// each head of hs values becomes w · (x / sqrt(mean(x²) + eps)), with W = [q_norm | k_norm]
// (one weight of hs for all q heads, one for all k heads). One invocation per (row, head) sums
// its head in order, as the oracle (src/model/reference.ts `headNorm`) does.
struct QkNormParams {
  nHeads: u32,
  nKv: u32,
  hs: u32,
  rowStride: u32,
  qOff: u32,
  kOff: u32,
  eps: f32,
  _p: u32,
}

@group(0) @binding(1) var<uniform> P: QkNormParams;
@group(0) @binding(2) var<storage, read_write> X: array<f32>;
@group(0) @binding(3) var<storage, read> W: array<f32>;

const WG = 64u;

@compute @workgroup_size(WG)
fn qk_norm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  let idx = linearWg(wid, nwg) * WG + lid;
  let perRow = P.nHeads + P.nKv;
  let r = idx / perRow;
  if (r >= stepM()) { return; }
  let h = idx % perRow;
  let isQ = h < P.nHeads;
  let base = r * P.rowStride + select(P.kOff + (h - P.nHeads) * P.hs, P.qOff + h * P.hs, isQ);
  let w = select(P.hs, 0u, isQ);
  var ss = 0.0;
  for (var i = 0u; i < P.hs; i++) {
    let v = X[base + i];
    ss += v * v;
  }
  let inv = 1.0 / sqrt(ss / f32(P.hs) + P.eps);
  for (var i = 0u; i < P.hs; i++) {
    X[base + i] = W[w + i] * (inv * X[base + i]);
  }
}
