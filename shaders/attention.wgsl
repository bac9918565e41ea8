// Causal grouped-query attention over the KV cache, for decode (m = 1) and prefill (m rows of
// one or several sequences): one workgroup per (row, query head). Row r at position p attends to
// t = 0..p of its slot's cache, query head h reads kv head (h + headOff) / kvMul, scores are
// q·k / sqrt(hs). The context is walked in blocks of B keys with an online (running max)
// softmax, so its length is bounded only by the cache, not by workgroup memory.
// Cache layout (per layer): [slot][kvHead][pos][hs].
const WG = 64u;
const B = 64u;        // keys per block: one score per invocation
const MAX_HS = 256u;  // 4 output dims per invocation
const NEG = -3.0e38;

var<workgroup> qs: array<f32, MAX_HS>;
var<workgroup> sc: array<f32, B>;

@compute @workgroup_size(WG)
fn attention(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) tid: u32) {
  let idx = linearWg(wid, nwg);
  let r = idx / P.nHeads;
  let h = idx % P.nHeads;
  if (r >= stepM()) { return; }
  let hs = P.hs;
  let n = stepPos(r) + 1u;
  let kvh = (h + P.headOff) / P.kvMul;
  let base = (stepSlot(r) * P.nKv + kvh) * P.maxSeq * hs;
  let qb = P.qOff + r * P.qStride + h * hs;
  for (var d = tid; d < hs; d += WG) { qs[d] = Q[qb + d]; }
  workgroupBarrier();

  var mx = NEG;
  var l = 0.0;
  var acc = vec4<f32>(0.0);
  for (var t0 = 0u; t0 < n; t0 += B) {
    let t = t0 + tid;
    var s = NEG;
    if (t < n) {
      let kb = base + t * hs;
      var dp = 0.0;
      for (var d = 0u; d < hs; d += 2u) {
        let k2 = kAt2(kb + d);
        dp += qs[d] * k2.x;
        dp += qs[d + 1u] * k2.y;
      }
      s = dp / P.scale;
    }
    sc[tid] = s;
    workgroupBarrier();
    let cnt = min(B, n - t0);
    var bm = mx;
    for (var j = 0u; j < cnt; j++) { bm = max(bm, sc[j]); }
    workgroupBarrier();
    sc[tid] = exp(s - bm);
    workgroupBarrier();
    let corr = exp(mx - bm);
    l *= corr;
    acc *= corr;
    for (var j = 0u; j < cnt; j++) {
      let p = sc[j];
      l += p;
      let vb = base + (t0 + j) * hs;
      // Two adjacent dims per load (a whole word of an f16 cache): dims 2·tid, +1, +128, +129.
      for (var q = 0u; q < 2u; q++) {
        let d = 2u * (tid + q * WG);
        if (d < hs) {
          let v2 = vAt2(vb + d);
          acc[2u * q] += p * v2.x;
          acc[2u * q + 1u] += p * v2.y;
        }
      }
    }
    mx = bm;
    workgroupBarrier();
  }
  let ob = P.outOff + r * P.outStride + h * hs;
  for (var q = 0u; q < 2u; q++) {
    let d = 2u * (tid + q * WG);
    if (d < hs) {
      OUT[ob + d] = acc[2u * q] / l;
      OUT[ob + d + 1u] = acc[2u * q + 1u] / l;
    }
  }
}
