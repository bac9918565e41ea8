// Attention in run.c's order (the runq.c-exact W8A8 path): per (row, query head), each score
// is q·k summed over the head dims in order and divided by sqrt(hs); the softmax is run.c's
// (the max, then expf and a running sum, then a division per score); the values are weighted
// key by key. Divisions and exp are correctly rounded (exact_math.wgsl). Dims go in pairs (hs is
// even), each still summed in run.c's order. One invocation per
// (row, head) with its scores in ATT (row·nHeads + head, maxSeq): slower than attention_sg's
// online softmax, whose last bits differ. Parameters and bindings: attention_common.wgsl.
@group(0) @binding(6) var<storage, read_write> ATT: array<f32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn attention_exact(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
  let idx = linearWg(wid, nwg) * WG + lid;
  let r = idx / P.nHeads;
  let h = idx % P.nHeads;
  if (r >= stepM()) { return; }
  let hs = P.hs;
  let n = stepPos(r) + 1u;
  let kvh = (h + P.headOff) / P.kvMul;
  let base = (stepSlot(r) * P.nKv + kvh) * P.maxSeq * hs;
  let qb = P.qOff + r * P.qStride + h * hs;
  let ab = idx * P.maxSeq;
  var mx = 0.0;
  for (var t = 0u; t < n; t++) {
    var s = 0.0;
    for (var i = 0u; i < hs; i += 2u) {
      let k2 = kAt2(base + t * hs + i);
      s += Q[qb + i] * k2.x;
      s += Q[qb + i + 1u] * k2.y;
    }
    s = divRn(s, P.scale);
    ATT[ab + t] = s;
    if (t == 0u || s > mx) { mx = s; }
  }
  var sum = 0.0;
  for (var t = 0u; t < n; t++) {
    let e = expRn(ATT[ab + t] - mx);
    ATT[ab + t] = e;
    sum += e;
  }
  for (var t = 0u; t < n; t++) { ATT[ab + t] = divRn(ATT[ab + t], sum); }
  let ob = P.outOff + r * P.outStride + h * hs;
  // Two dims at a time (whole words of an f16 cache), each summed over t in order as before.
  for (var i = 0u; i < hs; i += 2u) {
    var acc = vec2<f32>(0.0);
    for (var t = 0u; t < n; t++) {
      let v2 = vAt2(base + t * hs + i);
      acc.x += ATT[ab + t] * v2.x;
      acc.y += ATT[ab + t] * v2.y;
    }
    OUT[ob + i] = acc.x;
    OUT[ob + i + 1u] = acc.y;
  }
}
