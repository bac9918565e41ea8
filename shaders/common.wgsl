// Prepended to every kernel. Binding 0 of group 0 is the step block shared by all ops
// (src/gpu/core/buffers.ts StepParams): [0] = m, [1] = maxM, [4 + r] = position of row r,
// [4 + maxM + r] = KV slot of row r.
@group(0) @binding(0) var<storage, read> step: array<u32>;

fn stepM() -> u32 { return step[0]; }
fn stepPos(r: u32) -> u32 { return step[4u + r]; }
fn stepSlot(r: u32) -> u32 { return step[4u + step[1] + r]; }

// Workgroup index of a grid folded by src/gpu/core/layout.ts grid2d (dispatches stay ≤ 65535 per dim).
fn linearWg(wid: vec3<u32>, nwg: vec3<u32>) -> u32 { return wid.x + wid.y * nwg.x; }
