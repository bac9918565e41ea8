// An f16 table row read as f16 (shader-f16 only): the same bytes as embed_f16.wgsl's words.
enable f16;

@group(0) @binding(3) var<storage, read> TH: array<f16>;

@compute @workgroup_size(WG)
fn embed_f16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  let at = embedAt(wid, nwg, lid);
  if (!at.ok) { return; }
  Y[at.r * P.yStride + at.d] = f32(TH[at.row * P.rowWords * 2u + at.d]);
}
