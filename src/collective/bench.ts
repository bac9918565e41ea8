/**
 * Rank-side loops of `bench allreduce`, timed as a caller sees an all-reduce: from an input
 * Float32Array to the result array, copies into and out of the slots included. Each sample is a
 * batch of back-to-back all-reduces between two barriers, because performance.now() in an
 * isolated page is clamped to 5 µs.
 */
import type { SharedGroup } from './shared-group.js';
import { allReduce, type AllReduceAlgorithm, type AllReduceChoice } from './all-reduce.js';
import { barrier } from './barrier.js';

/** Rank `rank`'s input: any finite floats do (float adds take the same time for every value). */
function benchFloats(len: number, rank: number): Float32Array {
  const out = new Float32Array(len);
  for (let i = 0; i < len; i++) out[i] = (((i * 7919 + rank * 104729) % 2001) - 1000) / 256;
  return out;
}

/**
 * Times `samples` batches of `batch` all-reduces after `warmup` untimed ones; µs per all-reduce.
 * In place, every rank holds the same sum after the first round, which each round multiplies by
 * N until it is ±Infinity; float adds take the same time for that as for any normal value, and
 * the result is never read.
 */
export function timeAllReduce(
  comm: SharedGroup, floats: number, algorithm: AllReduceChoice, batch: number, samples: number, warmup = 2, inPlace = false,
): { timesUs: number[]; picked: AllReduceAlgorithm } {
  const input = benchFloats(floats, comm.rank);
  const out = inPlace ? input : new Float32Array(floats);
  let picked = allReduce(comm, input, algorithm, out);
  const timesUs = timeBatches(comm, batch, samples, warmup, () => (picked = allReduce(comm, input, algorithm, out)));
  return { timesUs, picked };
}

/** µs per call of `op`: `samples` batches of `batch` calls after `warmup` untimed ones, each after a barrier. */
function timeBatches(comm: SharedGroup, batch: number, samples: number, warmup: number, op: () => void): number[] {
  const timesUs: number[] = [];
  for (let s = 0; s < warmup + samples; s++) {
    barrier(comm);
    const t0 = performance.now();
    for (let b = 0; b < batch; b++) op();
    const t1 = performance.now();
    if (s >= warmup) timesUs.push(((t1 - t0) * 1000) / batch);
  }
  return timesUs;
}

/**
 * The copies an all-reduce of a caller's array cannot avoid, alone: every rank at once copies its
 * input into its slot and from there into its output (`copyThroughSlot`), with no sums and no
 * waits between ranks. So an all-reduce of `floats` from and to ordinary arrays (the same array
 * in place) can be no faster here; µs per pass.
 */
export function timeCopyFloor(comm: SharedGroup, floats: number, batch: number, samples: number, warmup = 2, inPlace = false): number[] {
  const input = benchFloats(floats, comm.rank);
  const out = inPlace ? input : new Float32Array(floats);
  const slot = comm.slot().subarray(0, floats);
  return timeBatches(comm, batch, samples, warmup, () => copyThroughSlot(input, slot, out));
}

/** `out` = `input`, by way of `slot`: the copy in and the copy out of an all-reduce of a caller's arrays. `out` may be `input`. */
export function copyThroughSlot(input: Float32Array, slot: Float32Array, out: Float32Array): void {
  slot.set(input);
  out.set(slot.subarray(0, input.length));
}

/** Single-thread SAB → SAB copy bandwidth in GB/s (median of `samples`). */
export function timeMemcpy(floats: number, reps: number, samples: number): number {
  const src = new Float32Array(new SharedArrayBuffer(floats * 4));
  const dst = new Float32Array(new SharedArrayBuffer(floats * 4));
  src.set(benchFloats(floats, 2));
  const gbs: number[] = [];
  for (let s = 0; s < samples + 1; s++) {
    const t0 = performance.now();
    for (let k = 0; k < reps; k++) dst.set(src);
    const t1 = performance.now();
    if (s > 0) gbs.push((floats * 4 * reps) / ((t1 - t0) * 1e6));
  }
  return median(gbs);
}

/** Messages arriving on one port, awaited in order. */
class Inbox {
  private queue: Float32Array[] = [];
  private waiting: ((x: Float32Array) => void) | undefined;
  constructor(port: MessagePort) {
    port.onmessage = (e: MessageEvent<Float32Array>) => {
      const w = this.waiting;
      this.waiting = undefined;
      if (w) w(e.data);
      else this.queue.push(e.data);
    };
  }
  next(): Promise<Float32Array> {
    const x = this.queue.shift();
    if (x) return Promise.resolve(x);
    return new Promise((r) => (this.waiting = r));
  }
}

/**
 * The postMessage baseline: rank j ≥ 1 posts its input to rank 0 (`ports[0]`), rank 0 (one port
 * per rank j, `ports[j−1]`) sums in rank order and posts the sum back to each; structured clone
 * copies every message.
 */
export async function timePostMessageAllReduce(
  comm: SharedGroup, ports: MessagePort[], floats: number, batch: number, samples: number, warmup = 2,
): Promise<number[]> {
  const inboxes = ports.map((p) => new Inbox(p));
  const input = benchFloats(floats, comm.rank);
  const out = new Float32Array(floats);
  const once = async () => {
    if (comm.rank === 0) {
      const parts = await Promise.all(inboxes.map((b) => b.next()));
      out.set(input);
      for (const p of parts) for (let i = 0; i < floats; i++) out[i] += p[i];
      for (const port of ports) port.postMessage(out);
    } else {
      ports[0].postMessage(input);
      out.set(await inboxes[0].next());
    }
  };
  const timesUs: number[] = [];
  for (let s = 0; s < warmup + samples; s++) {
    barrier(comm);
    const t0 = performance.now();
    for (let b = 0; b < batch; b++) await once();
    const t1 = performance.now();
    if (s >= warmup) timesUs.push(((t1 - t0) * 1000) / batch);
  }
  for (const p of ports) p.onmessage = null;
  return timesUs;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
