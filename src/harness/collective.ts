/**
 * Harness entry points of the collective area, on `window.tp.collective`: the same collectives as
 * the Node tests, run in real dedicated Web Workers, and the `bench allreduce` measurements.
 */
import { reviveError, type SerializedError } from '../errors.js';
import { createCollectiveBuffer, createCollectiveMemory, type CollectiveBuffer } from '../collective/layout.js';
import { ControlBlock } from '../collective/control.js';
import { simdSumAvailable } from '../collective/simd-sum.js';
import { DEFAULT_SPIN } from '../collective/shared-group.js';
import type { AllReduceAlgorithm, AllReduceChoice } from '../collective/all-reduce.js';
import type { RankJob, RankOp, RankResult } from '../../test-support/collective/ops.js';
import { firstBitDifference, randomFloats, referenceSum } from '../../test-support/collective/data.js';
import { median } from '../collective/bench.js';
import type { AllReduceBenchOptions, AllReduceBenchReport, CopyFloorBaseline } from '../collective/bench-types.js';
import type { RankRequest } from './collective.worker.js';

/** N dedicated workers, one request in flight per worker. */
class Ranks {
  private pending: ({ resolve(v: unknown): void; reject(e: unknown): void } | undefined)[];
  private constructor(private readonly workers: Worker[]) {
    this.pending = workers.map(() => undefined);
    workers.forEach((w, i) => {
      w.onmessage = (e: MessageEvent<{ ok: true; value: unknown } | { ok: false; error: SerializedError }>) => {
        const p = this.pending[i];
        this.pending[i] = undefined;
        if (e.data.ok) p?.resolve(e.data.value);
        else p?.reject(reviveError(e.data.error));
      };
      w.onerror = (e) => {
        const p = this.pending[i];
        this.pending[i] = undefined;
        p?.reject(new Error(`rank ${i} worker error: ${e.message}`));
      };
    });
  }

  static start(n: number): Ranks {
    return new Ranks(
      Array.from({ length: n }, () => new Worker(new URL('./collective.worker.ts', import.meta.url), { type: 'module' })),
    );
  }

  request<T>(i: number, msg: RankRequest, transfer: Transferable[] = []): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending[i] = { resolve: resolve as (v: unknown) => void, reject };
      this.workers[i].postMessage(msg, transfer);
    });
  }

  all<T>(msg: (rank: number) => RankRequest): Promise<T[]> {
    return Promise.all(this.workers.map((_, r) => this.request<T>(r, msg(r))));
  }

  close(): void {
    for (const w of this.workers) w.terminate();
  }
}

let groups = 0;

function runJobs(ranks: Ranks, sab: CollectiveBuffer, ops: RankOp[], opts?: RankJob['opts']): Promise<RankResult[][]> {
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
  const ranks = Ranks.start(world);
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
  const ranks = Ranks.start(world);
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
  const ranks = Ranks.start(world);
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

// ------------------------------------------------------------------------------ benchmark

/** All-reduces per sample: ≥ 1000 below 50 µs each (the timer ticks in 5 µs), else ~10 ms worth. */
function batchFor(us: number, smoke: boolean): number {
  if (smoke) return 5;
  const b = Math.ceil(10_000 / Math.max(us, 0.01));
  return Math.min(200_000, Math.max(us < 50 ? 1000 : 1, b));
}

/** nccl-tests' bus bandwidth (GB/s) of `floats` reduced in `us` µs over `world` ranks: algbw · 2(N−1)/N. */
function busbw(floats: number, us: number, world: number): number {
  return round((((floats * 4) / (us * 1e3)) * 2 * (world - 1)) / world);
}

/** Per sample the slowest rank's time, then the median over samples. */
function slowestMedian(perRank: number[][]): number {
  return median(perRank[0].map((_, s) => Math.max(...perRank.map((t) => t[s]))));
}

/**
 * `bench allreduce` in this page: for each world size, that many Web Workers; for each size and
 * algorithm (out of place, and `auto` in place too) a calibration run picks the batch, then
 * `samples` timed batches. Baselines: one thread's SAB→SAB copy bandwidth, the copy floor (every
 * rank's copies into and out of the slots alone, at once), and an all-reduce over postMessage.
 */
export async function benchAllReduce(opts: AllReduceBenchOptions): Promise<AllReduceBenchReport> {
  const smoke = !!opts.smoke;
  const samples = smoke ? 3 : (opts.samples ?? 20);
  const algorithms = opts.algorithms ?? ['one-shot', 'direct', 'auto'];
  // nccl-tests' in-place rows, for `auto` only: `[algorithm, inPlace]` in timing order.
  const cases: [AllReduceChoice, boolean][] = algorithms.map((a) => [a, false]);
  if ((opts.inPlace ?? true) && algorithms.includes('auto')) cases.push(['auto', true]);
  const spin = opts.spin ?? DEFAULT_SPIN;
  const maxFloats = Math.max(...opts.sizes);
  const copyFloor: CopyFloorBaseline[] = [];
  const report: AllReduceBenchReport = {
    results: [],
    baselines: { memcpy_gbs: 0, postmessage: [], copy_floor: copyFloor },
    meta: {
      spin,
      hardwareConcurrency: navigator.hardwareConcurrency,
      sums: simdSumAvailable() ? 'wasm-simd' : 'js',
      note: 'median of samples; each sample times `batch` back-to-back all-reduces (≥ 1000 when one takes < 50 µs, else ~10 ms worth; large sizes use batch 1 with samples of several ms) and takes the slowest rank',
    },
  };

  for (const world of opts.workers) {
    const ranks = Ranks.start(world);
    try {
      if (report.baselines.memcpy_gbs === 0) {
        const floats = smoke ? 65536 : Math.max(maxFloats, 1 << 20);
        report.baselines.memcpy_gbs = await ranks.request<number>(0, { kind: 'memcpy', floats, reps: Math.max(1, Math.round(2 ** 26 / (floats * 4))), samples: smoke ? 2 : 10 });
      }
      const sab = createCollectiveMemory({ world, slotFloats: maxFloats });
      const group = ++groups;
      const channels = Array.from({ length: world - 1 }, () => new MessageChannel());
      await ranks.request(0, { kind: 'ports', ports: channels.map((c) => c.port1) }, channels.map((c) => c.port1));
      for (let j = 1; j < world; j++) await ranks.request(j, { kind: 'ports', ports: [channels[j - 1].port2] }, [channels[j - 1].port2]);

      for (const floats of opts.sizes) {
        const calBatch = smoke ? 2 : Math.max(1, Math.min(1000, Math.floor(2e6 / Math.max(floats, 1))));
        for (const [algorithm, inPlace] of cases) {
          const bench = (batch: number, n: number) =>
            ranks.all<{ timesUs: number[]; picked: AllReduceAlgorithm }>((rank) => ({ kind: 'bench', sab, group, rank, spin, floats, algorithm, batch, samples: n, inPlace }));
          const cal = slowestMedian((await bench(calBatch, 1)).map((r) => r.timesUs));
          const batch = batchFor(cal, smoke);
          const runs = await bench(batch, samples);
          const us = slowestMedian(runs.map((r) => r.timesUs));
          report.results.push({
            workers: world, floats, algorithm, picked: runs[0].picked, in_place: inPlace, median_us: round(us),
            busbw_gbs: busbw(floats, us, world), batch, samples,
          });
        }
        if (world > 1 && (opts.copyFloor ?? true)) {
          for (const inPlace of [...new Set(cases.map(([, p]) => p))]) {
            const copies = (batch: number, n: number) => ranks.all<number[]>((rank) => ({ kind: 'copyfloor', sab, group, rank, floats, batch, samples: n, inPlace }));
            // Smoke sizes copy in well under the 5 µs timer tick: a smoke sample needs many passes.
            const calCopy = slowestMedian(await copies(smoke ? 1000 : calBatch, 1));
            const floorUs = slowestMedian(await copies(smoke ? 1000 : batchFor(calCopy, smoke), samples));
            copyFloor.push({
              workers: world, floats, in_place: inPlace, median_us: round(floorUs),
              // A pass faster than the timer can tell has no bandwidth to report.
              busbw_gbs: floorUs > 0 ? busbw(floats, floorUs, world) : 0,
            });
          }
        }
        if (world > 1) {
          const pm = (batch: number, n: number) => ranks.all<number[]>((rank) => ({ kind: 'postmessage', sab, group, rank, floats, batch, samples: n }));
          const cal = slowestMedian(await pm(smoke ? 2 : Math.max(1, Math.min(100, calBatch)), 1));
          const us = slowestMedian(await pm(batchFor(cal, smoke), samples));
          report.baselines.postmessage.push({ workers: world, floats, median_us: round(us) });
        }
      }
    } finally {
      ranks.close();
    }
  }
  report.baselines.memcpy_gbs = round(report.baselines.memcpy_gbs);
  return report;
}

const round = (x: number) => Math.round(x * 1000) / 1000;
