// An f16 table row (see embed_common.wgsl), packed two halves per u32 as the f16 matmuls read it
// (P.rowWords u32 per row); unpack2x16float is exact, so the row is the halves' f32 values.
@group(0) @binding(3) var<storage, read> TH: array<u32>;

@compute @workgroup_size(WG)
fn embed_f16(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
  let at = embedAt(wid, nwg, lid);
  if (!at.ok) { return; }
  let pair = unpack2x16float(TH[at.row * P.rowWords + at.d / 2u]);
  Y[at.r * P.yStride + at.d] = pair[at.d % 2u];
}
