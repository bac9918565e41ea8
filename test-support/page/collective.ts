/**
 * The test page's collective checks, on `window.tp.collective`: the same collectives as the Node
 * tests, run in real dedicated Web Workers (collective.worker.ts), on the CLI page's `Ranks`.
 */
import { createCollectiveBuffer, createCollectiveMemory, type CollectiveBuffer } from '../../src/collective/layout.js';
import { ControlBlock } from '../../src/collective/control.js';
import type { AllReduceAlgorithm, AllReduceChoice } from '../../src/collective/all-reduce.js';
import type { RankJob, RankOp, RankResult } from '../collective/ops.js';
import { firstBitDifference, randomFloats, referenceSum } from '../collective/data.js';
import { Ranks } from '../../src/cli/page/collective.js';
import type { CheckRequest } from './collective.worker.js';

/** `n` workers that each run one test job per request. */
function checkRanks(n: number): Ranks<CheckRequest> {
  return new Ranks(Array.from({ length: n }, () => new Worker(new URL('./collective.worker.ts', import.meta.url), { type: 'module' })));
}

let groups = 0;

function runJobs(ranks: Ranks<CheckRequest>, sab: CollectiveBuffer, ops: RankOp[], opts?: RankJob['opts']): Promise<RankResult[][]> {
  const group = ++groups;
  return ranks.all<RankResult[]>((rank) => ({ kind: 'job', job: { sab, group, rank, ops, opts } }));
}

export interface AllReduceCheck {
  len: number;
  algorithm: AllReduceChoice;
  zeroCopy: boolean;
  /** What each rank reported running. */
  picked: AllReduceAlgorithm[];
  /** Every rank's result equals the documented-order reference, bit for bit. */
  exact: boolean;
  /** Every rank's result equals rank 0's, bit for bit. */
  sameOnAllRanks: boolean;
  /** Every rank summed in WebAssembly SIMD. */
  simd: boolean;
}

/** Runs every algorithm (and auto, and zero-copy input) at each length on `world` workers. */
export async function checkAllReduce(opts: { world: number; lens: number[]; algorithms?: AllReduceChoice[] }): Promise<AllReduceCheck[]> {
  const { world, lens } = opts;
  const algorithms = opts.algorithms ?? ['one-shot', 'direct', 'auto'];
  const ranks = checkRanks(world);
  try {
    // A WebAssembly.Memory, as the engine uses: the SIMD sums must give the reference bits.
    const sab = createCollectiveMemory({ world, slotFloats: Math.max(...lens) });
    const ops: RankOp[] = [];
    for (const len of lens) {
      for (const zeroCopy of [false, true]) for (const algorithm of algorithms) ops.push({ kind: 'allReduce', len, algorithm, seed: len + world, zeroCopy });
    }
    const results = await runJobs(ranks, sab, ops);
    const refs = new Map<number, Float32Array>();
    return ops.map((op, k) => {
      if (op.kind !== 'allReduce') throw new Error('unreachable');
      let want = refs.get(op.len);
      if (!want) refs.set(op.len, (want = referenceSum(Array.from({ length: world }, (_, r) => randomFloats(op.len, op.seed, r)))));
      const got = results.map((res) => res[k]);
      return {
        len: op.len,
        algorithm: op.algorithm,
        zeroCopy: !!op.zeroCopy,
        picked: got.map((g) => g.algorithm!),
        exact: got.every((g) => firstBitDifference(g.data!, want) === -1),
        sameOnAllRanks: got.every((g) => firstBitDifference(g.data!, got[0].data!) === -1),
        simd: got.every((g) => g.simd === true),
      };
    });
  } finally {
    ranks.close();
  }
}

/** allGather with uneven counts, broadcast from every root, 200 barriers; true where every rank got the right bits. */
export async function checkCollectives(world: number): Promise<{ allGather: boolean; broadcast: boolean; barriers: number }> {
  const ranks = checkRanks(world);
  try {
    const counts = Array.from({ length: world }, (_, r) => Math.floor(512 / world) + (r < 512 % world ? 1 : 0));
    const sab = createCollectiveBuffer({ world, slotFloats: 1000 });
    const ops: RankOp[] = [{ kind: 'allGather', counts, seed: 3 }, { kind: 'allGather', counts, seed: 4, zeroCopy: true }];
    for (let root = 0; root < world; root++) ops.push({ kind: 'broadcast', len: 1000, root, seed: root });
    for (let k = 0; k < 200; k++) ops.push({ kind: 'barrier' });
    const results = await runJobs(ranks, sab, ops);
    const gathered = (seed: number) => {
      const out = new Float32Array(512);
      let at = 0;
      counts.forEach((n, r) => {
        out.set(randomFloats(n, seed, r), at);
        at += n;
      });
      return out;
    };
    const allGather = [3, 4].every((seed, k) => results.every((res) => firstBitDifference(res[k].data!, gathered(seed)) === -1));
    const broadcast = Array.from({ length: world }, (_, root) => root).every((root) =>
      results.every((res) => firstBitDifference(res[2 + root].data!, randomFloats(1000, root, root)) === -1),
    );
    const barriers = results[0].filter((r) => r.kind === 'barrier').length;
    return { allGather, broadcast, barriers };
  } finally {
    ranks.close();
  }
}

/**
 * Rank `absent` never joins a barrier; the others' errors, as they arrive on the page. Then abort
 * wakes a rank blocked in a collective. Errors are compared by `code`: the build minifies class
 * names.
 */
export async function checkFailures(world: number, absent: number): Promise<{ timeouts: { code?: string; missingRanks?: number[] }[]; abort?: string }> {
  const ranks = checkRanks(world);
  try {
    const sab = createCollectiveBuffer({ world, slotFloats: 64 });
    const group = ++groups;
    const present = Array.from({ length: world }, (_, r) => r).filter((r) => r !== absent);
    const errs = await Promise.all(
      present.map((rank) =>
        ranks.request<RankResult[]>(rank, { kind: 'job', job: { sab, group, rank, ops: [{ kind: 'barrier' }], opts: { timeoutMs: 300 } } }).then(
          () => ({ code: 'resolved' }),
          (e: { code?: string; missingRanks?: number[] }) => ({ code: e.code, missingRanks: e.missingRanks }),
        ),
      ),
    );
    const sab2 = createCollectiveBuffer({ world, slotFloats: 64 });
    const waiting = ranks.request<RankResult[]>(0, {
      kind: 'job', job: { sab: sab2, group: ++groups, rank: 0, ops: [{ kind: 'allReduce', len: 64, algorithm: 'one-shot', seed: 1 }], opts: { timeoutMs: 20_000 } },
    });
    await new Promise((r) => setTimeout(r, 100));
    new ControlBlock(sab2).abort();
    const abort = await waiting.then(() => 'resolved', (e: { code?: string }) => e.code);
    return { timeouts: errs, abort };
  } finally {
    ranks.close();
  }
}
