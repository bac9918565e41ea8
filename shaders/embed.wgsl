// An f32 table row (see embed_common.wgsl).
@group(0) @binding(3) var<storage, read> T: array<f32>;

@compute @workgroup_size(WG)
fn embed(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
  let at = embedAt(wid, nwg, lid);
  if (!at.ok) { return; }
  Y[at.r * P.yStride + at.d] = T[at.row * P.rowWords + at.d];
}
