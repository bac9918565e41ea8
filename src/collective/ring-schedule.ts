/**
 * The ring all-reduce schedule as data, independent of the transport: the SharedArrayBuffer ring
 * in all-reduce.ts walks it, and a message-passing ring (ranks in other tabs) can walk the same
 * steps with postMessage.
 *
 * Ranks form the ring 0 → 1 → … → N−1 → 0. At every step a rank sends one chunk (of the N in
 * `chunkBounds`) to its right neighbour and receives one from its left:
 * - reduce-scatter step s (0 ≤ s < N−1): send chunk (r−s), receive chunk (r−s−1) and add one's own
 *   values to it. Chunk c thus starts at rank c and accumulates c, c+1, …, c−1 in that order — the
 *   order `summationOrder` documents — and is complete at rank c−1 after N−1 steps.
 * - all-gather step s (0 ≤ s < N−1): send chunk (r−s+1) (the one completed or received last),
 *   receive chunk (r−s) and keep it.
 */
export interface RingStep {
  phase: 'reduce-scatter' | 'all-gather';
  /** Step index within its phase, 0 … N−2. */
  step: number;
  /** Chunk this rank sends to rank (r+1) mod N. */
  send: number;
  /** Chunk this rank receives from rank (r−1) mod N. */
  recv: number;
}

const mod = (a: number, n: number) => ((a % n) + n) % n;

/** The 2(N−1) steps of rank `rank` in a ring of `world` ranks. */
export function ringSchedule(rank: number, world: number): RingStep[] {
  const steps: RingStep[] = [];
  for (let s = 0; s < world - 1; s++) {
    steps.push({ phase: 'reduce-scatter', step: s, send: mod(rank - s, world), recv: mod(rank - s - 1, world) });
  }
  for (let s = 0; s < world - 1; s++) {
    steps.push({ phase: 'all-gather', step: s, send: mod(rank - s + 1, world), recv: mod(rank - s, world) });
  }
  return steps;
}

/** The chunk rank `rank` holds fully reduced after the reduce-scatter phase. */
export function ringOwnedChunk(rank: number, world: number): number {
  return mod(rank + 1, world);
}
