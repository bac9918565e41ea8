/**
 * Rank-side loops of `bench allreduce`, timed as a caller sees an all-reduce: from an input
 * Float32Array to the result array, copies into and out of the slots included. Each sample is a
 * batch of back-to-back all-reduces between two barriers, because performance.now() in an
 * isolated page is clamped to 5 µs.
 */
import type { Communicator } from './communicator.js';
import { DIRECT_BLOCK_FLOATS, DIRECT_BLOCKED_MIN, directBlockedLag, type AllReduceAlgorithm, type AllReduceChoice } from './all-reduce.js';
import { randomFloats } from './testing/data.js';

/**
 * Times `samples` batches of `batch` all-reduces after `warmup` untimed ones; µs per all-reduce.
 * In place, every rank holds the same sum after the first round, which each round multiplies by
 * N until it is ±Infinity; float adds take the same time for that as for any normal value, and
 * the result is never read.
 */
export function timeAllReduce(
  comm: Communicator, floats: number, algorithm: AllReduceChoice, batch: number, samples: number, warmup = 2, inPlace = false,
): { timesUs: number[]; picked: AllReduceAlgorithm } {
  const input = randomFloats(floats, 1, comm.rank);
  const out = inPlace ? input : new Float32Array(floats);
  let picked = comm.allReduce(input, algorithm, out);
  const timesUs = timeBatches(comm, batch, samples, warmup, () => (picked = comm.allReduce(input, algorithm, out)));
  return { timesUs, picked };
}

/** µs per call of `op`: `samples` batches of `batch` calls after `warmup` untimed ones, each after a barrier. */
function timeBatches(comm: Communicator, batch: number, samples: number, warmup: number, op: () => void): number[] {
  const timesUs: number[] = [];
  for (let s = 0; s < warmup + samples; s++) {
    comm.barrier();
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
export function timeCopyFloor(comm: Communicator, floats: number, batch: number, samples: number, warmup = 2, inPlace = false): number[] {
  const input = randomFloats(floats, 1, comm.rank);
  const out = inPlace ? input : new Float32Array(floats);
  const slot = comm.slot().subarray(0, floats);
  return timeBatches(comm, batch, samples, warmup, () => copyThroughSlot(input, slot, out));
}

/**
 * `out` = `input`, by way of `slot`, on `directBlocked`'s schedule without its sums and waits:
 * blocks of `DIRECT_BLOCK_FLOATS`, block j copied in at step j − m and out at step j + m (m the
 * lag), through a ring of 4m areas, the slot footprint of its input and result areas (one piece
 * below its minimum length). It copies out of its own areas, where `directBlocked` reads every
 * rank's result areas (lines other cores wrote): a lower bound, not a model of the sums' traffic.
 * `out` may be `input`.
 */
export function copyThroughSlot(input: Float32Array, slot: Float32Array, out: Float32Array): void {
  const floats = input.length;
  if (floats < DIRECT_BLOCKED_MIN) {
    slot.set(input);
    out.set(slot.subarray(0, floats));
    return;
  }
  const B = DIRECT_BLOCK_FLOATS;
  const m = directBlockedLag(floats);
  const areas = 4 * m;
  const nb = Math.ceil(floats / B);
  const area = (j: number) => (j % areas) * B;
  const copyIn = (j: number) => slot.set(input.subarray(j * B, Math.min((j + 1) * B, floats)), area(j));
  for (let j = 0; j < Math.min(m, nb); j++) copyIn(j);
  for (let k = 0; k < nb + m; k++) {
    if (k >= m) {
      const j = k - m;
      out.set(slot.subarray(area(j), area(j) + Math.min(B, floats - j * B)), j * B);
    }
    if (k + m < nb) copyIn(k + m);
  }
}

/** Single-thread SAB → SAB copy bandwidth in GB/s (median of `samples`). */
export function timeMemcpy(floats: number, reps: number, samples: number): number {
  const src = new Float32Array(new SharedArrayBuffer(floats * 4));
  const dst = new Float32Array(new SharedArrayBuffer(floats * 4));
  src.set(randomFloats(floats, 2, 0));
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
  comm: Communicator, ports: MessagePort[], floats: number, batch: number, samples: number, warmup = 2,
): Promise<number[]> {
  const inboxes = ports.map((p) => new Inbox(p));
  const input = randomFloats(floats, 1, comm.rank);
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
    comm.barrier();
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
