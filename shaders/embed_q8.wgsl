// A dequantised Q8_0 table row: q · scale, runq.c's `dequantize` (see embed_common.wgsl).
@group(0) @binding(3) var<storage, read> TQ: array<u32>;
@group(0) @binding(5) var<storage, read> TS: array<f32>;

@compute @workgroup_size(WG)
fn embed_q8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  let at = embedAt(wid, nwg, lid);
  if (!at.ok) { return; }
  let q = i8x4(TQ[at.row * P.rowWords + at.d / 4u])[at.d % 4u];
  Y[at.r * P.yStride + at.d] = f32(q) * TS[at.row * (P.dim / P.groupSize) + at.d / P.groupSize];
}
