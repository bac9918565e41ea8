// Copies the k and v rows of this step into the cache at (slots[r], positions[r]).
// Cache layout (per layer): [slot][kvHead][pos][hs]. One invocation per pair of values (hs is
// even), so each writes whole words of an f16 cache. KC, VC, kPut2, vPut2: src/gpu/kv-format.ts.
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

const WG = 64u;

@compute @workgroup_size(WG)
fn kv_write(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
  let idx = linearWg(wid, nwg) * WG + lid;
  let half = P.hs / 2u;
  let perRow = P.nKv * half;
  let r = idx / perRow;
  if (r >= stepM()) { return; }
  let h = (idx % perRow) / half;
  let d = 2u * (idx % half);
  let c = ((stepSlot(r) * P.nKv + h) * P.maxSeq + stepPos(r)) * P.hs + d;
  let k = P.kOff + r * P.kStride + h * P.hs + d;
  let v = P.vOff + r * P.vStride + h * P.hs + d;
  kPut2(c, vec2<f32>(K[k], K[k + 1u]));
  vPut2(c, vec2<f32>(V[v], V[v + 1u]));
}
