// A dequantised Q4_0 table row: (nibble − 8) · scale (see embed_common.wgsl). Element e of a group
// of 32 is in byte e % 16 of the group's 16, the low nibble for e < 16 and the high one for e ≥ 16.
@group(0) @binding(3) var<storage, read> TQ: array<u32>;
@group(0) @binding(5) var<storage, read> TS: array<f32>;

@compute @workgroup_size(WG)
fn embed_q4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  let at = embedAt(wid, nwg, lid);
  if (!at.ok) { return; }
  let e = at.d % 32u;
  let word = TQ[at.row * P.rowWords + (at.d / 32u) * 4u + (e % 16u) / 4u];
  let q = (word >> ((e % 4u) * 8u + (e / 16u) * 4u)) & 0xfu;
  Y[at.r * P.yStride + at.d] = (f32(q) - 8.0) * TS[at.row * (P.dim / 32u) + at.d / 32u];
}
