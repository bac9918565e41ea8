// A dequantised q8_m table row (GGUF's Q4_1, Q5_x and K-quants): code · scale + min, as the
// oracle dequantises (see embed_common.wgsl). TS: one (scale, min) pair per group.
@group(0) @binding(3) var<storage, read> TQ: array<u32>;
@group(0) @binding(5) var<storage, read> TS: array<vec2<f32>>;

@compute @workgroup_size(WG)
fn embed_q8m(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  let at = embedAt(wid, nwg, lid);
  if (!at.ok) { return; }
  let code = (TQ[at.row * P.rowWords + at.d / 4u] >> (8u * (at.d % 4u))) & 0xffu;
  let sm = TS[at.row * (P.dim / P.groupSize) + at.d / P.groupSize];
  Y[at.r * P.yStride + at.d] = f32(code) * sm.x + sm.y;
}
