// Per row r: out[2r] = index of the largest of x[r][0..n), out[2r + 1] = its value's bits;
// ties go to the lowest index (run.c's sample_argmax). One workgroup per row. The value is
// returned so that ranks holding slices of the vocabulary can combine their winners.
struct ArgmaxParams { n: u32, xStride: u32, xOff: u32, _p: u32 }

@group(0) @binding(1) var<uniform> P: ArgmaxParams;
@group(0) @binding(2) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<storage, read_write> OUT: array<u32>;

const WG = 256u;
var<workgroup> bv: array<f32, WG>;
var<workgroup> bi: array<u32, WG>;

@compute @workgroup_size(WG)
fn argmax(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) tid: u32) {
  let r = linearWg(wid, nwg);
  if (r >= stepM()) { return; }
  let base = P.xOff + r * P.xStride;
  var best = -3.402823e38;
  var besti = 0xffffffffu;
  // Each invocation scans ascending indices, so a strict > keeps its lowest index on ties.
  for (var i = tid; i < P.n; i += WG) {
    let v = X[base + i];
    if (v > best || besti == 0xffffffffu) {
      best = v;
      besti = i;
    }
  }
  bv[tid] = best;
  bi[tid] = besti;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) {
      let v = bv[tid + s];
      let j = bi[tid + s];
      if (j != 0xffffffffu && (v > bv[tid] || (v == bv[tid] && j < bi[tid]) || bi[tid] == 0xffffffffu)) {
        bv[tid] = v;
        bi[tid] = j;
      }
    }
    workgroupBarrier();
  }
  if (tid == 0u) {
    OUT[2u * r] = bi[0];
    OUT[2u * r + 1u] = bitcast<u32>(bv[0]);
  }
}
