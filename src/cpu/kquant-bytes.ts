/**
 * What q8_m matrices (GGUF's Q4_1, Q5_x, K-quants) cost a CPU rank beyond its shard: a Q8_0 or
 * Q4_0 part fused beside a q8_m one (wq|wk|wv, w1|w3) tiles in its exact q8_m form
 * (workers/cpu-kquant.ts), 3/16 of a byte a value more than the shard holds (Q8_0: 1.0625 → 1.25
 * bytes a value; Q4_0: 0.5625 → 0.75). Other q8_m tiles take no more than the shard.
 */

/** The matrix a tensor is fused into on a rank (`attention.wqkv`, `feed_forward.w13`), or its own name. */
export function fusedName(name: string): string {
  return name.replace(/attention\.w[qkv]$/, 'attention.wqkv').replace(/feed_forward\.w[13]$/, 'feed_forward.w13');
}

/** Per tensor (by name) the bytes its CPU tile takes beyond the shard's, for tensors or a rank's slices. */
export function q8mTileExtraBytes(ts: readonly { name: string; dtype: string; shape: readonly number[] }[]): Map<string, number> {
  const q8m = new Set(ts.filter((t) => t.dtype === 'q8_m').map((t) => fusedName(t.name)));
  const out = new Map<string, number>();
  for (const t of ts) {
    if ((t.dtype === 'q8_0' || t.dtype === 'q4_0') && q8m.has(fusedName(t.name))) out.set(t.name, (t.shape[0]! * t.shape[1]! * 3) / 16);
  }
  return out;
}
