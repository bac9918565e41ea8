// Copies the k and v rows of this step into the cache at (slots[r], positions[r]).
// Cache layout (per layer): [slot][kvHead][pos][hs].
struct KvParams {
  nKv: u32,
  hs: u32,
  maxSeq: u32,
  kStride: u32,
  kOff: u32,
  vStride: u32,
  vOff: u32,
  _p: u32,
}

@group(0) @binding(1) var<uniform> P: KvParams;
@group(0) @binding(2) var<storage, read> K: array<f32>;
@group(0) @binding(3) var<storage, read> V: array<f32>;
@group(0) @binding(4) var<storage, read_write> KC: array<f32>;
@group(0) @binding(5) var<storage, read_write> VC: array<f32>;

const WG = 64u;

@compute @workgroup_size(WG)
fn kv_write(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  let idx = linearWg(wid, nwg) * WG + lid;
  let perRow = P.nKv * P.hs;
  let r = idx / perRow;
  if (r >= stepM()) { return; }
  let h = (idx % perRow) / P.hs;
  let d = idx % P.hs;
  let c = ((stepSlot(r) * P.nKv + h) * P.maxSeq + stepPos(r)) * P.hs + d;
  KC[c] = K[P.kOff + r * P.kStride + h * P.hs + d];
  VC[c] = V[P.vOff + r * P.vStride + h * P.hs + d];
}
