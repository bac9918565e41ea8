/** Byte plumbing the format and backend unit tests share: a stream read whole, a rank's shard packed as the loader packs it. */
import type { ByteSource } from '../../src/loader/source.js';
import type { RankPlan } from '../../src/parallel/plan.js';

/** Every chunk of `src`, concatenated. */
export async function collectBytes(src: ByteSource): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of src.chunks()) parts.push(c.slice());
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.byteLength;
  }
  return out;
}

/** Rank `r`'s packed shard from `file` (the stream's bytes): its slices, dense, in plan order, from their byte ranges. */
export function packRank(r: RankPlan, file: Uint8Array): ArrayBuffer {
  const out = new Uint8Array(r.byteLength);
  let at = 0;
  for (const s of r.slices) {
    for (const g of s.ranges) out.set(file.subarray(g.fileOffset, g.fileOffset + g.length), at + g.dstOffset);
    at += s.byteLength;
  }
  return out.buffer;
}
