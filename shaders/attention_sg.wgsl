enable subgroups;
// Attention with one subgroup per (row, query head): WG = the adapter's minimum subgroup size,
// so a workgroup is exactly one subgroup and needs no workgroup memory and no barrier (on CPU
// adapters a barrier suspends and resumes every SIMD group, the dominant cost of the workgroup
// kernel). Lane i owns head dims i, i + WG, ...; a score is one subgroupAdd of the lanes'
// partial dot products, and the softmax runs online key by key on that uniform value.
// Parameters and bindings: attention_common.wgsl; cache layout as attention.wgsl.
override WG: u32 = 4u;
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
  let per = (hs + WG - 1u) / WG;
  let n = stepPos(r) + 1u;
  let kvh = (h + P.headOff) / P.kvMul;
  let base = (stepSlot(r) * P.nKv + kvh) * P.maxSeq * hs;
  let qb = P.qOff + r * P.qStride + h * hs;
  var q: array<f32, MAX_PER_LANE>;
  var acc: array<f32, MAX_PER_LANE>;
  for (var i = 0u; i < per; i++) {
    let d = lane + i * WG;
    q[i] = select(0.0, Q[qb + min(d, hs - 1u)], d < hs);
    acc[i] = 0.0;
  }
  var mx = NEG;
  var l = 0.0;
  for (var t = 0u; t < n; t++) {
    let kb = base + t * hs;
    var dp = 0.0;
    for (var i = 0u; i < per; i++) {
      let d = lane + i * WG;
      if (d < hs) { dp += q[i] * kAt(kb + d); }
    }
    let s = subgroupAdd(dp) / P.scale;
    let m2 = max(mx, s);
    let corr = exp(mx - m2);
    let p = exp(s - m2);
    l = l * corr + p;
    for (var i = 0u; i < per; i++) {
      let d = lane + i * WG;
      if (d < hs) { acc[i] = acc[i] * corr + p * vAt(kb + d); }
    }
    mx = m2;
  }
  let ob = P.outOff + r * P.outStride + h * hs;
  for (var i = 0u; i < per; i++) {
    let d = lane + i * WG;
    if (d < hs) { OUT[ob + d] = acc[i] / l; }
  }
}
