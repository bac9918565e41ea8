/**
 * All-reduce (sum) of Float32Arrays over the ranks of a group, three ways behind one call:
 *
 * - `one-shot`: each rank writes its slot, one barrier, every rank sums all slots itself. One sync,
 *   N× the reads: the choice for small, latency-bound vectors (decode).
 * - `ring`: N−1 reduce-scatter + N−1 all-gather steps (see ring-schedule.ts), each rank syncing
 *   only with its neighbours through their progress counters. Moves the optimal 2(N−1)/N·bytes.
 * - `direct`: each rank reduces its 1/N chunk straight from all slots, a barrier, then copies every
 *   chunk. Two barriers, and less memory traffic than the ring over shared memory. A long vector
 *   that is not already in the slot runs in pipelined blocks (`directBlocked`), one wait per
 *   block, so that it moves through the cache rather than through memory.
 *
 * All three produce exactly the sums of `summationOrder` (layout.ts), so results are
 * bitwise-identical on every rank and across algorithms.
 */
import { InvalidArgumentError } from '../errors.js';
import type { Communicator } from './communicator.js';
import { chunkBounds, summationOrders } from './layout.js';
import { ringOwnedChunk, ringSchedule } from './ring-schedule.js';

export type AllReduceAlgorithm = 'one-shot' | 'ring' | 'direct';
export type AllReduceChoice = AllReduceAlgorithm | 'auto';
export const ALL_REDUCE_ALGORITHMS: readonly AllReduceAlgorithm[] = ['one-shot', 'ring', 'direct'];

/**
 * Largest vector (floats) `auto` sends one-shot, per world size; above it, `direct`.
 * Measured with `webgpu-tp bench allreduce --workers 2,4 --sizes 768,2048,8192,16384` (2 cores,
 * headless Chromium, medians µs): at 2 ranks direct won at every size (768: 3.0 vs one-shot
 * 4.0; 2048: 5.4 vs 7.2; 16384: 29.7 vs 39.3; ring 3.7/5.9/29.9); at 4 ranks one-shot won up to
 * 2048 (70 vs direct 77) and direct from 8192 (104 vs 137). Ring never won over shared memory
 * here; it is the schedule the point-to-point (tab) transport needs.
 */
const ONE_SHOT_MAX_FLOATS: Record<number, number> = { 2: 0 };
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
  comm: Communicator, input: Float32Array, algorithm: AllReduceChoice = 'auto', out: Float32Array = input,
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
  else if (algo === 'ring') ring(comm, input, out);
  else if (len >= DIRECT_BLOCKED_MIN && !comm.isOwnSlot(input)) directBlocked(comm, input, out);
  else direct(comm, input, out);
  return algo;
}

/**
 * dst[i] = sum over k of src[k][i] for i in [a, b), left to right, rounding to float32 after
 * every addition (in WebAssembly SIMD when every array is in the group's Memory). A double holds the sum of two floats closely enough that rounding it to float32
 * equals float32 addition (53 ≥ 2·24+2), so Math.fround gives IEEE float32 results. `dst` may be
 * `src[0]` (in place): each element is read before it is written.
 */
function sumInto(comm: Communicator, dst: Float32Array, src: readonly Float32Array[], a: number, b: number): void {
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
function oneShot(comm: Communicator, input: Float32Array, out: Float32Array): void {
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
function direct(comm: Communicator, input: Float32Array, out: Float32Array): void {
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

/**
 * Floats per block of `directBlocked` (128 KB). With DIRECT_LAG its ring of areas is 2 MB per
 * rank, held by the L3 (32 MB, shared; the L2 is 512 KB per core) while the caller's vectors
 * stream through. Chromium, 2 ranks, 4M floats, 10 alternating runs each on a quiet machine,
 * median busbw/memcpy: the lockstep 256 KB blocks 40.0%, lag 4 with 128 KB blocks 44.4%, lag 2
 * with 256 KB blocks 37.1% (a third of its runs took 11–15 ms instead of 7–8). Lag 8 (4 MB per
 * rank) was slower than lag 4 on a busy machine.
 */
export const DIRECT_BLOCK_FLOATS = 32768;

/**
 * How far (in blocks) ranks of `directBlocked` may drift apart, plus one: at step k a rank waits
 * for the others' step k − lag, lag = min(DIRECT_LAG, len / (4·B)). In lockstep (lag 1) a
 * rank that was late by a wake-up or a time slice stalled the other at every block, and the two
 * took turns being late: the one that slept woke late, so the other slept, and so on.
 */
export const DIRECT_LAG = 4;

/**
 * How long a rank of `directBlocked` spins on an awaited rank whose counter stands still before
 * it sleeps (µs; see `Communicator.waitRank`): while the counter moves, the rank is running and
 * the wait is short, so it spins on. It must exceed a step (~45 µs for a 128 KB block here), or a
 * rank sleeps on a peer that is merely mid-step. 4M floats at 2 ranks, `bench allreduce
 * --workers 2 --sizes 2048,4194304`, runs of ≥ 8 ms (against ~6): the earlier rule (spin ≤ 30 µs,
 * only on a rank one step short) 8 of 14 quiet runs, a 30 µs limit 4 of 16, 200 µs 0 of 10. The
 * price is paid on a loaded machine, where a descheduled peer is spun on for the whole limit:
 * beside one busy-looping process, 18–20 ms against the earlier rule's 12–15 ms. A variant that
 * fell back to the earlier rule after one such miss lost most of the quiet gain (3 of 6 slow).
 * Only this path spins by time: the engine reduces from its slot (zero copy, workers/
 * shard.worker.ts) and never takes it, so its ranks never spin against SwiftShader for the cores.
 */
export const DIRECT_SPIN_US = 200;

/**
 * Shortest vector `directBlocked` takes (1 MB): 8 blocks, so lag ≥ 2 and its slot holds the
 * 4·lag block areas. Shorter vectors fit the caches in one piece (`direct`).
 */
export const DIRECT_BLOCKED_MIN = 8 * DIRECT_BLOCK_FLOATS;

/** The lag m of `directBlocked` for a `len`-float vector: DIRECT_LAG, fewer if it has < 4m blocks. */
export function directBlockedLag(len: number): number {
  return Math.min(DIRECT_LAG, Math.floor(len / (4 * DIRECT_BLOCK_FLOATS)));
}

/**
 * `direct` block by block, pipelined, for a long vector the caller holds outside the slot. Done
 * in one piece, a 16 MB vector is copied into the slot, read back for the sums and copied out
 * again, and every one of those passes goes to memory, because the slots are far larger than the
 * caches. In blocks, the slot lines are read while still in the cache, and only the caller's
 * input and output touch memory.
 *
 * With lag m (DIRECT_LAG, fewer if the vector is too short for 4m blocks) and A = 2m, the slot
 * holds 2A areas of B floats: input areas `in[k % A]` and result areas `res[k % A]`. With nb
 * blocks, before step 0 every rank copies
 * blocks 0..m−1 in and publishes t+1; step k (0 ≤ k < nb + m) waits until every rank has
 * published t+k−m+2 (its step k−m done; t+1 while k−m < 0), then copies block k−m's results of
 * every rank out (k ≥ m), copies block k+m in (k+m < nb), sums this rank's 1/N of block k from
 * every rank's `in[k % A]` into its `res[k % A]` (k < nb), and publishes t+k+2. The wait at step
 * k lets the others still be at step k−m+1, so a rank may run m−1 steps ahead. Every access is
 * ordered by that wait or one of this rank's own earlier steps:
 * - block k−m's results (copied out at k): every rank summed them at its step k−m.
 * - block k (summed at k) was copied in by its owner at its step k−m (before t+1 if k < m).
 * - copying block k+m into `in[(k+m) % A]` overwrites block k−m, which every rank summed at its
 *   step k−m (this rank too, earlier).
 * - summing block k into `res[k % A]` overwrites block k−2m's results, which every rank copied
 *   out at its step k−m.
 * Each element is summed in the order of its chunk of the whole vector (the documented order),
 * so the bits equal `direct`'s, `ring`'s and `one-shot`'s. In place (`out === input`) is safe:
 * block j's output is written at step j+m, after its input was read at step j−m (or before).
 */
function directBlocked(comm: Communicator, input: Float32Array, out: Float32Array): void {
  const len = input.length;
  const n = comm.world;
  const r = comm.rank;
  const B = DIRECT_BLOCK_FLOATS;
  // The same on every rank, as it depends only on the length.
  const m = directBlockedLag(len);
  const A = 2 * m;
  const nb = Math.ceil(len / B);
  const bounds = comm.chunks(len);
  const full = chunkBounds(B, n);
  const last = chunkBounds(len - (nb - 1) * B, n);
  const area = (w: number) => comm.slots.map((s) => s.subarray(w * B, (w + 1) * B));
  const ins = Array.from({ length: A }, (_, w) => area(w));
  const res = Array.from({ length: A }, (_, w) => area(A + w));
  // orders[w][c]: the input areas w of every rank in the summation order of chunk c.
  const orders = ins.map((byRank) => summationOrders(byRank));
  const copyIn = (k: number) => ins[k % A][r].set(input.subarray(k * B, Math.min((k + 1) * B, len)));
  const copyOut = (k: number) => {
    const sub = k === nb - 1 ? last : full;
    const from = res[k % A];
    for (let j = 0; j < n; j++) {
      if (sub[j] < sub[j + 1]) out.set(from[j].subarray(sub[j], sub[j + 1]), k * B + sub[j]);
    }
  };
  const sum = (k: number) => {
    // This rank's part of block k, in block positions [p, q), split where the whole vector's
    // chunks (and so the summation orders) change.
    const a0 = k * B;
    const sub = k === nb - 1 ? last : full;
    let p = sub[r];
    const q = sub[r + 1];
    let c = 0;
    while (p < q && bounds[c + 1] <= a0 + p) c++;
    while (p < q) {
      const e = Math.min(q, bounds[c + 1] - a0);
      sumInto(comm, res[k % A][r], orders[k % A][c], p, e);
      p = e;
      c++;
    }
  };
  const t = comm.begin('allReduce');
  comm.acquireOwnSlot();
  for (let k = 0; k < Math.min(m, nb); k++) copyIn(k);
  comm.publish(t + 1);
  for (let k = 0; k < nb + m; k++) {
    comm.waitAll(t + Math.max(k - m + 2, 1), DIRECT_SPIN_US);
    if (k >= m) copyOut(k - m);
    if (k + m < nb) copyIn(k + m);
    if (k < nb) sum(k);
    comm.publish(t + k + 2);
  }
  const end = t + nb + m + 1;
  comm.exposeSlot(comm.otherRanks, end);
  comm.end(end);
}

/**
 * The ring over shared memory. A rank's slot is its send buffer: at reduce-scatter step s it
 * replaces its chunk (r−s−1) with left's partial + its own values and publishes tick t+2+s; the
 * right neighbour reads it at its step s+1. All-gather step s copies chunk (r−s) from left's
 * slot into its own (for the right neighbour) and into `out`.
 *
 * Only left is waited for. Overwriting chunk (r−s) at all-gather step s is safe because right
 * read it at its reduce-scatter step s, and every tick X ≥ t+2 a rank publishes implies its left
 * had reached X−1: left at t+n+s implies, N−2 hops round the ring, right at t+s+2.
 */
function ring(comm: Communicator, input: Float32Array, out: Float32Array): void {
  const n = comm.world;
  const r = comm.rank;
  const left = (r + n - 1) % n;
  const right = (r + 1) % n;
  const bounds = comm.chunks(input.length);
  const mine = comm.slots[r];
  const lefts = comm.slots[left];
  const pair = [lefts, mine];
  const t = comm.begin('allReduce');
  comm.writeOwnSlot(input);
  comm.publish(t + 1);
  let s = 0;
  for (const step of ringSchedule(r, n)) {
    const a = bounds[step.recv];
    const b = bounds[step.recv + 1];
    if (step.phase === 'reduce-scatter') {
      comm.waitRank(left, t + 1 + s);
      sumInto(comm, mine, pair, a, b);
      comm.publish(t + 2 + s);
      if (s === n - 2) {
        const own = ringOwnedChunk(r, n);
        out.set(mine.subarray(bounds[own], bounds[own + 1]), bounds[own]);
      }
    } else {
      const g = s - (n - 1);
      comm.waitRank(left, t + n + g);
      if (g < n - 2) {
        mine.set(lefts.subarray(a, b), a);
        comm.publish(t + n + 1 + g);
        out.set(mine.subarray(a, b), a);
      } else {
        // Last step: nobody reads this chunk from our slot, so copy straight to out.
        out.set(lefts.subarray(a, b), a);
        comm.publish(t + n + 1 + g);
      }
    }
    s++;
  }
  const end = t + 2 * n - 1;
  comm.exposeSlot([right], end);
  comm.end(end);
}
