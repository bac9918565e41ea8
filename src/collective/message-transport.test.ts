import { afterEach, describe, expect, it } from 'vitest';
import { broadcastLinks, MessageCommunicator, type MessageCommunicatorOptions } from './message-transport.js';
import { firstBitDifference, randomFloats, rankOrderSum, referenceSum } from '../../test-support/collective/data.js';
import { AbortedError, CollectiveTimeoutError, WorkerFailedError } from '../errors.js';

let groups = 0;
const open: MessageCommunicator[] = [];
afterEach(() => {
  for (const c of open.splice(0)) c.close();
});

/** `world` ranks of a fresh group in this thread, over Node's BroadcastChannel; `absent` ranks are never created. */
function group(world: number, opts: MessageCommunicatorOptions = {}, absent: number[] = []): (MessageCommunicator | undefined)[] {
  const name = `test-${process.pid}-${++groups}`;
  return Array.from({ length: world }, (_, r) => {
    if (absent.includes(r)) return undefined;
    const c = new MessageCommunicator(broadcastLinks(name, r, world), r, world, opts);
    open.push(c);
    return c;
  });
}

describe('message all-reduce', () => {
  for (const world of [2, 3, 4]) {
    for (const algorithm of ['one-shot', 'ring'] as const) {
      it(`${algorithm} over ${world} ranks: every rank gets the documented sum, bit for bit`, async () => {
        const ranks = group(world) as MessageCommunicator[];
        for (const [k, len] of [1, 31, 100, 4097, 70_001].entries()) {
          const inputs = ranks.map((_, r) => randomFloats(len, 40 + k, r));
          const outs = ranks.map(() => new Float32Array(len));
          await Promise.all(ranks.map((c, r) => c.allReduceArray(inputs[r]!, algorithm, outs[r])));
          const want = referenceSum(inputs);
          for (const out of outs) expect(firstBitDifference(out, want), `len ${len}`).toBe(-1);
          // The inputs are left as they were (out was separate).
          expect(firstBitDifference(inputs[0]!, randomFloats(len, 40 + k, 0))).toBe(-1);
        }
      });
    }
  }

  it('the order matters on this data, so the bitwise checks can fail', () => {
    const inputs = [0, 1, 2].map((r) => randomFloats(4096, 3, r));
    expect(firstBitDifference(referenceSum(inputs), rankOrderSum(inputs))).not.toBe(-1);
  });

  it('auto picks one-shot for small vectors and the ring for large ones; in place works', async () => {
    const ranks = group(3, { oneShotMaxFloats: 64 }) as MessageCommunicator[];
    for (const [len, algo] of [[64, 'one-shot'], [65, 'ring']] as const) {
      const inputs = ranks.map((_, r) => randomFloats(len, 7, r));
      const bufs = inputs.map((x) => Float32Array.from(x));
      const picked = await Promise.all(ranks.map((c, r) => c.allReduceArray(bufs[r]!)));
      expect(picked).toEqual([algo, algo, algo]);
      for (const b of bufs) expect(firstBitDifference(b, referenceSum(inputs))).toBe(-1);
    }
    await Promise.all(ranks.map((c) => c.barrier()));
    expect(ranks.map((c) => c.sequence)).toEqual([3, 3, 3]);
  });
});

describe('the Communicator interface over messages', () => {
  it('allReduce(n) sums every slot, broadcast(n, root) gives the root’s slot bit for bit (−0 included)', async () => {
    const ranks = group(3) as MessageCommunicator[];
    const len = 5000;
    const inputs = ranks.map((_, r) => randomFloats(len, 11, r));
    for (const [r, c] of ranks.entries()) c.slot(len).set(inputs[r]!);
    const sums = await Promise.all(ranks.map((c) => c.allReduce(len)));
    for (const s of sums) expect(firstBitDifference(s, referenceSum(inputs))).toBe(-1);
    for (let root = 0; root < 3; root++) {
      const want = randomFloats(len, 20 + root, root);
      want[0] = -0;
      for (const [r, c] of ranks.entries()) c.slot(len).set(r === root ? want : randomFloats(len, 30, r));
      const got = await Promise.all(ranks.map((c) => c.broadcast(len, root)));
      for (const g of got) expect(firstBitDifference(g, want)).toBe(-1);
    }
  });
});

describe('liveness', () => {
  it('a silent rank (frozen or gone, no heartbeats) fails the others\' wait with a timeout naming it', async () => {
    const ranks = group(3, { timeoutMs: 300, heartbeatMs: 50 }, [2]);
    const t0 = performance.now();
    const errs = [0, 1].map((r) => ranks[r]!.allReduceArray(randomFloats(1000, 1, r), 'ring').catch((e: unknown) => e));
    // Rank 0 waits for its left neighbour, rank 2; rank 1 waits for rank 0, which is stuck too but alive.
    const e0 = await errs[0];
    expect(e0).toBeInstanceOf(CollectiveTimeoutError);
    expect((e0 as CollectiveTimeoutError).missingRanks).toEqual([2]);
    expect((e0 as Error).message).toMatch(/allReduce #1 on rank 0 timed out after 300 ms waiting for rank 2/);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(250);
    // Rank 0 closing (as the engine does when it fails the request) releases rank 1 at once.
    ranks[0]!.close();
    const e1 = await errs[1];
    expect(e1).toBeInstanceOf(WorkerFailedError);
    expect((e1 as WorkerFailedError).rank).toBe(0);
  });

  it('a slow rank that keeps sending heartbeats is waited for past the timeout', async () => {
    // The silence limit (timeoutMs) is 20 heartbeats, so a test process stalled for a few
    // hundred ms (CI runs browsers beside it) does not read as a silent peer.
    const ranks = group(2, { timeoutMs: 800, heartbeatMs: 40 }) as MessageCommunicator[];
    const early = ranks[0]!.allReduceArray(randomFloats(100, 2, 0), 'one-shot', new Float32Array(100)).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 1600));
    const out = new Float32Array(100);
    await ranks[1]!.allReduceArray(randomFloats(100, 2, 1), 'one-shot', out);
    expect(await early).toBe('one-shot');
    expect(firstBitDifference(out, referenceSum([0, 1].map((r) => randomFloats(100, 2, r))))).toBe(-1);
  });

  it('a peer that heartbeats but never arrives fails the wait after stallMs', async () => {
    // As above: a silence limit of 20 heartbeats, so only the stall can end the wait.
    const ranks = group(2, { timeoutMs: 800, heartbeatMs: 40, stallMs: 1600 }) as MessageCommunicator[];
    const t0 = performance.now();
    const e = await ranks[0]!.allReduceArray(randomFloats(10, 1, 0), 'one-shot').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(CollectiveTimeoutError);
    expect((e as Error).message).toContain('timed out after 1600 ms waiting for rank 1');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(1550);
  });

  it('a rank that closes (its tab goes away) fails a peer\'s wait at once with WorkerFailedError naming it', async () => {
    const ranks = group(2, { timeoutMs: 20_000 }) as MessageCommunicator[];
    const waiting = ranks[0]!.allReduceArray(randomFloats(10, 1, 0), 'one-shot').catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 50));
    ranks[1]!.close();
    const e = await waiting;
    expect(e).toBeInstanceOf(WorkerFailedError);
    expect((e as WorkerFailedError).rank).toBe(1);
  });
});

describe('message abort', () => {
  it('abort() fails the pending wait and every later collective with AbortedError, without telling the peers it left', async () => {
    const [a, b] = group(2, { timeoutMs: 5000 }) as MessageCommunicator[];
    const pending = a!.allReduceArray(new Float32Array(8));
    a!.abort('the step failed');
    await expect(pending).rejects.toBeInstanceOf(AbortedError);
    await expect(a!.allReduceArray(new Float32Array(8))).rejects.toThrow(/the step failed/);
    // The peer is told nothing: its wait does not end as if rank 0 had gone.
    const other = b!.allReduceArray(new Float32Array(8));
    b!.abort();
    await expect(other).rejects.toBeInstanceOf(AbortedError);
  });
});
