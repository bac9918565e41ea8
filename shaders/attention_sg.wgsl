enable subgroups;
// Attention with one subgroup per (row, query head): WG = the adapter's minimum subgroup size,
// so a workgroup is exactly one subgroup and needs no workgroup memory and no barrier (on CPU
// adapters a barrier suspends and resumes every SIMD group, the dominant cost of the workgroup
// kernel). Lane i owns head-dim units i, i + WG, ... of U dims each; a score is one subgroupAdd
// of the lanes' partial dot products, and the softmax runs online key by key on that uniform
// value. U = 2 for an f16 cache: a lane reads whole packed words (one unpack per two values).
// Parameters and bindings: attention_common.wgsl; cache layout as attention.wgsl.
override WG: u32 = 4u;
override U: u32 = 1u;     // 1 (f32 cache) or 2 (f16 cache; hs even)
const MAX_PER_LANE = 64u; // head dims per lane: hs ≤ 64·WG
const NEG = -3.0e38;

@compute @workgroup_size(WG)
fn attention_sg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lane: u32) {
  let idx = linearWg(wid, nwg);
  let r = idx / P.nHeads;
  let h = idx % P.nHeads;
  if (r >= stepM()) { return; }
  let hs = P.hs;
  let units = hs / U;
  let per = (units + WG - 1u) / WG;
  let n = stepPos(r) + 1u;
  let kvh = (h + P.headOff) / P.kvMul;
  let base = (stepSlot(r) * P.nKv + kvh) * P.maxSeq * hs;
  let qb = P.qOff + r * P.qStride + h * hs;
  var q: array<f32, MAX_PER_LANE>;
  var acc: array<f32, MAX_PER_LANE>;
  for (var i = 0u; i < per; i++) {
    for (var j = 0u; j < U; j++) {
      let d = (lane + i * WG) * U + j;
      q[i * U + j] = select(0.0, Q[qb + min(d, hs - 1u)], d < hs);
      acc[i * U + j] = 0.0;
    }
  }
  var mx = NEG;
  var l = 0.0;
  for (var t = 0u; t < n; t++) {
    let kb = base + t * hs;
    var dp = 0.0;
    for (var i = 0u; i < per; i++) {
      let u = lane + i * WG;
      if (u >= units) { continue; }
      if (U == 2u) {
        let k2 = kAt2(kb + 2u * u);
        dp += q[2u * i] * k2.x;
        dp += q[2u * i + 1u] * k2.y;
      } else {
        dp += q[i] * kAt(kb + u);
      }
    }
    let s = subgroupAdd(dp) / P.scale;
    let m2 = max(mx, s);
    let corr = exp(mx - m2);
    let p = exp(s - m2);
    l = l * corr + p;
    for (var i = 0u; i < per; i++) {
      let u = lane + i * WG;
      if (u >= units) { continue; }
      if (U == 2u) {
        let v2 = vAt2(kb + 2u * u);
        acc[2u * i] = acc[2u * i] * corr + p * v2.x;
        acc[2u * i + 1u] = acc[2u * i + 1u] * corr + p * v2.y;
      } else {
        acc[i] = acc[i] * corr + p * vAt(kb + u);
      }
    }
    mx = m2;
  }
  let ob = P.outOff + r * P.outStride + h * hs;
  for (var i = 0u; i < per; i++) {
    for (var j = 0u; j < U; j++) {
      let d = (lane + i * WG) * U + j;
      if (d < hs) { OUT[ob + d] = acc[i * U + j] / l; }
    }
  }
}
