/**
 * Ranks in separate tabs, for `bench allreduce`: each page joins a message-passing group
 * (src/collective/message-transport.ts) as one rank, then times the same all-reduces as its
 * peers. The test page checks their bits.
 */
import { broadcastLinks, MessageCommunicator } from '../../collective/message-transport.js';

const groups = new Map<string, MessageCommunicator>();

/** Joins `group` as `rank` of `world`; the rank leaves (and tells its peers) when the page goes away. */
export function join(group: string, rank: number, world: number, opts: { timeoutMs?: number; heartbeatMs?: number } = {}): void {
  groups.get(group)?.close();
  const comm = new MessageCommunicator(broadcastLinks(group, rank, world), rank, world, opts);
  groups.set(group, comm);
  addEventListener('pagehide', () => comm.close(), { once: true });
}

/** This page's communicator in `group`, if it has joined. */
export function joined(group: string): MessageCommunicator | undefined {
  return groups.get(group);
}

export function leave(group: string): void {
  groups.get(group)?.close();
  groups.delete(group);
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
