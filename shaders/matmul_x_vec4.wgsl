// matmul input loaders when K, the row strides and offsets of x (and AUX) are multiples of 4:
// a row's vec4s are whole and aligned, so each is one load.
@group(0) @binding(2) var<storage, read> X: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> AUX: array<vec4<f32>>;

fn xScalar(i: u32) -> f32 { return X[i / 4u][i % 4u]; }
fn auxScalar(i: u32) -> f32 { return AUX[i / 4u][i % 4u]; }
fn load4(base: u32, k: u32) -> vec4<f32> { return X[base / 4u]; }
fn aux4(base: u32, k: u32) -> vec4<f32> { return AUX[base / 4u]; }
