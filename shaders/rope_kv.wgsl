// Fused with rope.wgsl (whose parameters, bindings and helpers it uses): rotate q in place,
// rotate k into the cache, copy v into the cache, for rows holding [q heads | k heads | v heads]
// at qOff, kOff, vOff. A k or v invocation writes values 2i and 2i + 1 of its head, one word of
// an f16 cache, whichever elements the style pairs. KC, VC, kPut2, vPut2: src/gpu/kernels/kv-format.ts.

// Cache layout (per layer): [slot][kvHead][pos][hs].
fn cacheIndex(slot: u32, h: u32, pos: u32) -> u32 {
  return ((slot * P.nKv + h) * P.maxSeq + pos) * P.hs;
}

// Value d of the head at X[base..] rotated to position pos (the head itself is left as it is).
fn rotated(base: u32, d: u32, pos: u32) -> f32 {
  let half = P.hs / 2u;
  var i = d % half;
  var first = d < half;
  if (STYLE == 0u) {
    i = d / 2u;
    first = d % 2u == 0u;
  }
  let pr = pairOf(i);
  let v = rotate(vec2<f32>(X[base + pr.x], X[base + pr.y]), TAB[pos * half + i]);
  return select(v.y, v.x, first);
}

@compute @workgroup_size(WG)
fn rope_kv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
  let half = P.hs / 2u;
  let idx = linearWg(wid, nwg) * WG + lid;
  let perRow = (P.nHeads + 2u * P.nKv) * half;
  let r = idx / perRow;
  if (r >= stepM()) { return; }
  let hh = (idx % perRow) / half;
  let i = idx % half;
  let pos = stepPos(r);
  let row = r * P.rowStride;
  if (hh < P.nHeads) {
    let pr = pairOf(i);
    let base = row + P.qOff + hh * P.hs;
    let v = rotate(vec2<f32>(X[base + pr.x], X[base + pr.y]), TAB[pos * half + i]);
    X[base + pr.x] = v.x;
    X[base + pr.y] = v.y;
  } else if (hh < P.nHeads + P.nKv) {
    let h = hh - P.nHeads;
    let base = row + P.kOff + h * P.hs;
    let d = 2u * i;
    kPut2(cacheIndex(stepSlot(r), h, pos) + d, vec2<f32>(rotated(base, d, pos), rotated(base, d + 1u, pos)));
  } else {
    let h = hh - P.nHeads - P.nKv;
    let base = row + P.vOff + h * P.hs + 2u * i;
    vPut2(cacheIndex(stepSlot(r), h, pos) + 2u * i, vec2<f32>(X[base], X[base + 1u]));
  }
}
