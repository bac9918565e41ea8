/**
 * Test data for the collectives, shared by the Node (worker_threads) tests and the browser
 * harness: seeded inputs and the reference sums in the documented order.
 */
import { chunkBounds, summationOrder } from '../../src/collective/layout.js';
import { mulberry32 as rng } from '../../src/model/mulberry32.js';

/** 2^-8 … 2^8, exact: a lookup costs a third of `2 **` per value. */
const POW2 = Array.from({ length: 17 }, (_, k) => 2 ** (k - 8));

/**
 * Rank `rank`'s input for `seed`: signed values whose magnitudes span 2^-8…2^8, so float32
 * rounding differs between summation orders and a wrong order shows up as different bits.
 */
export function randomFloats(len: number, seed: number, rank: number): Float32Array {
  const next = rng(Math.imul(seed, 0x9e3779b1) ^ Math.imul(rank + 1, 0x85ebca6b));
  const out = new Float32Array(len);
  for (let i = 0; i < len; i++) out[i] = (next() * 2 - 1) * POW2[Math.floor(next() * 17 - 8) + 8];
  return out;
}

/** The sum of `inputs` in `summationOrder`, float32 after every addition: what all-reduce must return. */
export function referenceSum(inputs: readonly Float32Array[]): Float32Array {
  const world = inputs.length;
  const len = inputs[0].length;
  const bounds = chunkBounds(len, world);
  const out = new Float32Array(len);
  for (let c = 0; c < world; c++) {
    const order = summationOrder(c, world);
    for (let i = bounds[c]; i < bounds[c + 1]; i++) {
      out[i] = inputs[order[0]][i];
      for (let k = 1; k < world; k++) out[i] = out[i] + inputs[order[k]][i]; // stored as float32 each time
    }
  }
  return out;
}

/** The plain rank-order sum ((s0+s1)+s2)+…, for checking that the order matters on this data. */
export function rankOrderSum(inputs: readonly Float32Array[]): Float32Array {
  const out = Float32Array.from(inputs[0]);
  for (let k = 1; k < inputs.length; k++) for (let i = 0; i < out.length; i++) out[i] = out[i] + inputs[k][i];
  return out;
}

/** Index of the first element whose bits differ (NaN-safe), or -1 when `a` and `b` are bitwise equal. */
export function firstBitDifference(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
}
