/**
 * `bench allreduce` in the page, on `window.tp.collective`: the collectives run in real dedicated
 * Web Workers. The test page runs its collective checks on the same `Ranks`.
 */
import { reviveError, type SerializedError } from '../../errors.js';
import { createCollectiveMemory } from '../../collective/layout.js';
import { simdSumAvailable } from '../../collective/simd-sum.js';
import { DEFAULT_SPIN } from '../../collective/shared-group.js';
import type { AllReduceAlgorithm, AllReduceChoice } from '../../collective/all-reduce.js';
import { median } from '../../collective/bench.js';
import type { AllReduceBenchOptions, AllReduceBenchReport, CopyFloorBaseline } from '../../collective/bench-types.js';
import type { RankRequest } from './collective.worker.js';

/** N dedicated workers, one request in flight per worker. */
export class Ranks<Request> {
  private pending: ({ resolve(v: unknown): void; reject(e: unknown): void } | undefined)[];
  constructor(private readonly workers: Worker[]) {
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

  request<T>(i: number, msg: Request, transfer: Transferable[] = []): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending[i] = { resolve: resolve as (v: unknown) => void, reject };
      this.workers[i].postMessage(msg, transfer);
    });
  }

  all<T>(msg: (rank: number) => Request): Promise<T[]> {
    return Promise.all(this.workers.map((_, r) => this.request<T>(r, msg(r))));
  }

  close(): void {
    for (const w of this.workers) w.terminate();
  }
}

/** `n` workers that run the benchmark's loops (collective.worker.ts). */
function benchRanks(n: number): Ranks<RankRequest> {
  return new Ranks(Array.from({ length: n }, () => new Worker(new URL('./collective.worker.ts', import.meta.url), { type: 'module' })));
}

let groups = 0;

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
    const ranks = benchRanks(world);
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
