/**
 * Harness entry points for ranks in separate tabs: each page joins a message-passing group
 * (src/collective/message-transport.ts) as one rank, then runs the same all-reduces as its
 * peers. Results are checked in the page against the documented sum and returned as a hash of
 * their bits, so the test can see that every page holds the same bits.
 */
import { broadcastLinks, MessageCommunicator, type MessageAllReduceAlgorithm } from '../collective/message-transport.js';
import { firstBitDifference, randomFloats, referenceSum } from '../../test-support/collective/data.js';
import { fnv1a64 } from '../parallel/plan.js';
import { serializeError, type SerializedError } from '../errors.js';

const groups = new Map<string, MessageCommunicator>();

/** Joins `group` as `rank` of `world`; the rank leaves (and tells its peers) when the page goes away. */
export function join(group: string, rank: number, world: number, opts: { timeoutMs?: number; heartbeatMs?: number } = {}): void {
  groups.get(group)?.close();
  const comm = new MessageCommunicator(broadcastLinks(group, rank, world), rank, world, opts);
  groups.set(group, comm);
  addEventListener('pagehide', () => comm.close(), { once: true });
}

export function leave(group: string): void {
  groups.get(group)?.close();
  groups.delete(group);
}

function hashBits(a: Float32Array): string {
  const u = new Uint32Array(a.buffer, a.byteOffset, a.length);
  let s = '';
  for (let i = 0; i < u.length; i++) s += String.fromCharCode(u[i]! & 0xffff, u[i]! >>> 16);
  return fnv1a64(s);
}

export interface TabAllReduceResult {
  len: number;
  algorithm: MessageAllReduceAlgorithm;
  /** First element whose bits differ from the documented sum, or -1. */
  firstDifference: number;
  hash: string;
}

/** Runs one all-reduce per length on seeded inputs (every rank makes its own and everyone's, to check). */
export async function allReduce(
  group: string, lens: number[], seed: number, algorithm: MessageAllReduceAlgorithm | 'auto' = 'auto',
): Promise<TabAllReduceResult[] | { error: SerializedError }> {
  const comm = groups.get(group);
  if (!comm) return { error: serializeError(new Error(`not joined to ${group}`)) };
  try {
    const out: TabAllReduceResult[] = [];
    for (const [k, len] of lens.entries()) {
      const inputs = Array.from({ length: comm.world }, (_, r) => randomFloats(len, seed + k, r));
      const sum = new Float32Array(len);
      const algo = await comm.allReduceArray(inputs[comm.rank]!, algorithm, sum);
      out.push({ len, algorithm: algo, firstDifference: firstBitDifference(sum, referenceSum(inputs)), hash: hashBits(sum) });
    }
    return out;
  } catch (e) {
    return { error: serializeError(e) };
  }
}

/** Median µs per all-reduce of each size, after a warm-up (both pages call this at once). */
export async function bench(group: string, sizes: number[], iters: number): Promise<{ floats: number; algorithm: string; median_us: number }[]> {
  const comm = groups.get(group)!;
  const out: { floats: number; algorithm: string; median_us: number }[] = [];
  for (const floats of sizes) {
    const x = new Float32Array(floats).fill(1);
    const y = new Float32Array(floats);
    let algorithm = '';
    for (let i = 0; i < 3; i++) algorithm = await comm.allReduceArray(x, 'auto', y);
    const times: number[] = [];
    for (let i = 0; i < iters; i++) {
      await comm.barrier();
      const t0 = performance.now();
      await comm.allReduceArray(x, 'auto', y);
      times.push((performance.now() - t0) * 1000);
    }
    times.sort((a, b) => a - b);
    out.push({ floats, algorithm, median_us: times[Math.floor(times.length / 2)]! });
  }
  return out;
}
