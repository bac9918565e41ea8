/**
 * All-reduce (sum) of Float32Arrays over the ranks of a SharedArrayBuffer group, two ways
 * behind one call:
 *
 * - `one-shot`: each rank writes its slot, one barrier, every rank sums all slots itself. One sync,
 *   N× the reads: the choice for small, latency-bound vectors (decode) on 4 or more ranks.
 * - `direct`: each rank reduces its 1/N chunk straight from all slots, a barrier, then copies every
 *   chunk. Two barriers, and 1/N of the reads each.
 *
 * Both produce exactly the sums of `summationOrder` (layout.ts), so results are
 * bitwise-identical on every rank and across algorithms (and equal the message transport's).
 */
import { InvalidArgumentError } from '../errors.js';
import type { SharedGroup } from './shared-group.js';

export type AllReduceAlgorithm = 'one-shot' | 'direct';
export type AllReduceChoice = AllReduceAlgorithm | 'auto';
export const ALL_REDUCE_ALGORITHMS: readonly AllReduceAlgorithm[] = ['one-shot', 'direct'];

/**
 * Largest vector (floats) `auto` sends one-shot, per world size; above it, `direct`. Measured
 * with `bench allreduce`: at 2 ranks one-shot wins below ~3000 floats (a decode step's 768-float
 * x: one barrier instead of two), at 4 ranks up to a few thousand floats.
 */
const ONE_SHOT_MAX_FLOATS: Record<number, number> = { 2: 2048 };
const ONE_SHOT_MAX_DEFAULT = 4096;

/** The algorithm `auto` uses for `floats` floats over `world` ranks (the same on every rank). */
export function pickAllReduce(floats: number, world: number): AllReduceAlgorithm {
  return floats <= (ONE_SHOT_MAX_FLOATS[world] ?? ONE_SHOT_MAX_DEFAULT) ? 'one-shot' : 'direct';
}

/**
 * All-reduce (sum): `out` (default `input`, i.e. in place) receives the sum of every rank's
 * `input`, identical to the last bit on every rank. Returns the algorithm that ran, so callers
 * can record what `auto` picked. Zero-copy input: pass (a prefix of) `comm.slot()`, already
 * filled, with a separate `out`.
 */
export function allReduce(
  comm: SharedGroup, input: Float32Array, algorithm: AllReduceChoice = 'auto', out: Float32Array = input,
): AllReduceAlgorithm {
  const len = input.length;
  const algo = algorithm === 'auto' ? pickAllReduce(len, comm.world) : algorithm;
  if (comm.world === 1) {
    if (out !== input) out.set(input);
    return algo;
  }
  if (!ALL_REDUCE_ALGORITHMS.includes(algo)) {
    throw new InvalidArgumentError(`allReduce: expected one of auto, ${ALL_REDUCE_ALGORITHMS.join(', ')}; got ${String(algorithm)}`);
  }
  if (out.length < len) throw new InvalidArgumentError(`allReduce: expected an output of at least ${len} floats, got ${out.length}`);
  comm.checkLength(len, 'allReduce');
  comm.checkOutput(out, 'allReduce');
  if (len === 0) return algo;
  if (algo === 'one-shot') oneShot(comm, input, out);
  else direct(comm, input, out);
  return algo;
}

/**
 * dst[i] = sum over k of src[k][i] for i in [a, b), left to right, rounding to float32 after
 * every addition (in WebAssembly SIMD when every array is in the group's Memory). A double holds the sum of two floats closely enough that rounding it to float32
 * equals float32 addition (53 ≥ 2·24+2), so Math.fround gives IEEE float32 results. `dst` may be
 * `src[0]` (in place): each element is read before it is written.
 */
function sumInto(comm: SharedGroup, dst: Float32Array, src: readonly Float32Array[], a: number, b: number): void {
  if (comm.simd?.sum(dst, src, a, b)) return;
  const n = src.length;
  const x = src[0];
  const y = src[1];
  if (n === 2) {
    for (let i = a; i < b; i++) dst[i] = Math.fround(x[i] + y[i]);
    return;
  }
  const z = src[2];
  if (n === 3) {
    for (let i = a; i < b; i++) dst[i] = Math.fround(Math.fround(x[i] + y[i]) + z[i]);
    return;
  }
  const w = src[3];
  for (let i = a; i < b; i++) dst[i] = Math.fround(Math.fround(Math.fround(x[i] + y[i]) + z[i]) + w[i]);
  for (let k = 4; k < n; k++) {
    const v = src[k];
    for (let i = a; i < b; i++) dst[i] = Math.fround(dst[i] + v[i]);
  }
}

/** Write slot, barrier, every rank sums every chunk in its rotated order. */
function oneShot(comm: SharedGroup, input: Float32Array, out: Float32Array): void {
  const bounds = comm.chunks(input.length);
  const t = comm.begin('allReduce');
  comm.writeOwnSlot(input);
  comm.publish(t + 1);
  comm.waitAll(t + 1);
  for (let c = 0; c < comm.world; c++) {
    if (bounds[c] < bounds[c + 1]) sumInto(comm, out, comm.chunkOrders[c], bounds[c], bounds[c + 1]);
  }
  comm.publish(t + 2);
  comm.exposeSlot(comm.otherRanks, t + 2);
  comm.end(t + 2);
}

/** Reduce own chunk from all slots into own slot, barrier, copy every chunk. */
function direct(comm: SharedGroup, input: Float32Array, out: Float32Array): void {
  const bounds = comm.chunks(input.length);
  const r = comm.rank;
  const t = comm.begin('allReduce');
  comm.writeOwnSlot(input);
  comm.publish(t + 1);
  comm.waitAll(t + 1);
  // Rank r owns chunk r; its order starts at r, so the first source is the destination itself.
  if (bounds[r] < bounds[r + 1]) sumInto(comm, comm.slots[r], comm.chunkOrders[r], bounds[r], bounds[r + 1]);
  comm.publish(t + 2);
  comm.waitAll(t + 2);
  for (let c = 0; c < comm.world; c++) {
    if (bounds[c] < bounds[c + 1]) out.set(comm.slots[c].subarray(bounds[c], bounds[c + 1]), bounds[c]);
  }
  comm.publish(t + 3);
  comm.exposeSlot(comm.otherRanks, t + 3);
  comm.end(t + 3);
}
