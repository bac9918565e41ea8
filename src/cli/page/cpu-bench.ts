/**
 * The CPU-rank benchmarks in the page, on `window.tp.cpu`: the memory roofline (one thread's
 * WebAssembly SIMD read of a byte count, and two threads' read of its halves at once, each the
 * faster of one and two streams a thread) and the CPU
 * kernels' matmuls on stories110M's shapes at TP 1 and 2, each thread a dedicated worker as a CPU
 * rank is. Every figure is the slowest thread's time, the median over interleaved samples.
 */
import { Ranks } from './collective.js';
import type { CpuBenchRequest } from './cpu-bench.worker.js';
import type { CpuGemmFigures, CpuGemmRow, CpuMatmulRow, CpuQuantGemmFigures, CpuQuantGemmRow } from '../bench-kernels.js';
import { relaxedSimdAvailable } from '../../cpu/kernels.js';
import { concatReads, gbs, readFigure, type ReadSamples } from '../read-figures.js';
import { median } from './median.js';

/** A sample is at least this long, so the 5 µs timer and thread start-up stay below 1%. */
const SAMPLE_MS = 25;

/** `threads` workers that run together: `time` is the slowest one's ms per run. */
class Threads {
  private readonly ranks: Ranks<CpuBenchRequest>;
  constructor(readonly threads: number) {
    this.ranks = new Ranks(Array.from({ length: threads }, () => new Worker(new URL('./cpu-bench.worker.ts', import.meta.url), { type: 'module' })));
  }

  setup(msg: (i: number) => CpuBenchRequest): Promise<unknown[]> {
    return this.ranks.all(msg);
  }

  async time(reps: number): Promise<number> {
    const arrived = new Int32Array(new SharedArrayBuffer(4));
    const ms = await this.ranks.all<number>(() => ({ kind: 'run', reps, arrived, threads: this.threads }));
    return Math.max(...ms) / reps;
  }

  /** Runs per sample for about SAMPLE_MS (after one untimed run). */
  async reps(): Promise<number> {
    await this.time(1);
    return Math.max(1, Math.ceil(SAMPLE_MS / Math.max(await this.time(1), 1e-3)));
  }

  close(): void {
    this.ranks.close();
  }
}

/** The threads of one read pattern, and its runs per sample. */
interface ReadGroup { threads: Threads; reps: number }

/**
 * One thread reading all of a shared memory's bytes, and two reading a half each, every thread's
 * bytes as one stream and as two (read2).
 */
class ReadRoofline {
  private constructor(
    readonly bytes: number,
    private readonly groups: Record<keyof ReadSamples, ReadGroup>,
  ) {}

  static async open(bytes: number): Promise<ReadRoofline> {
    // Halves of halves of whole 64-byte turns (two threads, two streams each).
    const b = Math.max(256, Math.floor(bytes / 256) * 256);
    const pages = Math.ceil(b / 65536);
    const memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
    // Written, not left zero: untouched pages may all map one zero page and read from cache.
    new Float32Array(memory.buffer, 0, b / 4).fill(0.25);
    const group = async (threads: number, streams: 1 | 2): Promise<ReadGroup> => {
      const t = new Threads(threads);
      await t.setup((i) => ({ kind: 'read', memory, at: (i * b) / threads, bytes: b / threads, streams }));
      return { threads: t, reps: await t.reps() };
    };
    return new ReadRoofline(b, {
      one_ms: await group(1, 1), two_ms: await group(2, 1), one_split_ms: await group(1, 2), two_split_ms: await group(2, 2),
    });
  }

  /** `samples` interleaved turns of the four reads of all the bytes (ms each). */
  async measure(samples: number): Promise<ReadSamples> {
    const r: ReadSamples = { one_ms: [], two_ms: [], one_split_ms: [], two_split_ms: [] };
    for (let s = 0; s < samples; s++) {
      for (const k of Object.keys(r) as (keyof ReadSamples)[]) r[k].push(await this.groups[k].threads.time(this.groups[k].reps));
    }
    return r;
  }

  close(): void {
    for (const g of Object.values(this.groups)) g.threads.close();
  }
}

let open: ReadRoofline | undefined;

/** Keeps a roofline of `bytes` ready (its memory written) for `measureRead` until `closeRead`. */
export async function openRead(bytes: number): Promise<number> {
  open?.close();
  open = await ReadRoofline.open(bytes);
  return open.bytes;
}

export function measureRead(samples: number): Promise<ReadSamples> {
  if (!open) throw new Error('measureRead before openRead');
  return open.measure(samples);
}

export function closeRead(): void {
  open?.close();
  open = undefined;
}

/**
 * stories110M's matrices (dim 768, hidden 2048, vocab 32000) as f32 CPU matmuls of m rows: the
 * whole matrix on one thread (TP 1), and its TP 2 shards (column: n/2 rows of the weights, row:
 * k/2 columns) on two threads at once, beside the read of the same bytes by as many threads.
 * `smoke`: tiny shapes, one sample.
 */
export async function benchMatmuls(smoke: boolean): Promise<CpuMatmulRow[]> {
  const d = smoke ? 64 : 768;
  const h = smoke ? 128 : 2048;
  const v = smoke ? 512 : 32000;
  const samples = smoke ? 1 : 5;
  const matrices = [
    { matrix: 'wqkv', k: d, n: 3 * d, split: 'col' as const },
    { matrix: 'wo', k: d, n: d, split: 'row' as const },
    { matrix: 'w13', k: d, n: 2 * h, split: 'col' as const },
    { matrix: 'w2', k: h, n: d, split: 'row' as const },
    { matrix: 'output', k: d, n: v, split: 'col' as const },
  ];
  const rows: CpuMatmulRow[] = [];
  for (const c of matrices) {
    const bytes = c.n * c.k * 4;
    const read = await ReadRoofline.open(bytes);
    try {
      for (const m of [1, 8]) {
        const one = new Threads(1);
        const two = new Threads(2);
        try {
          await one.setup(() => ({ kind: 'matmul', m, k: c.k, n: c.n }));
          await two.setup(() => ({ kind: 'matmul', m, k: c.split === 'row' ? c.k / 2 : c.k, n: c.split === 'col' ? c.n / 2 : c.n }));
          const reps = { one: await one.reps(), two: await two.reps() };
          const t = { one: [] as number[], two: [] as number[] };
          const reads: ReadSamples[] = [];
          for (let s = 0; s < samples; s++) {
            t.one.push(await one.time(reps.one));
            t.two.push(await two.time(reps.two));
            reads.push(await read.measure(1));
          }
          const r = concatReads(reads);
          for (const tp of [1, 2] as const) {
            const ms = median(tp === 1 ? t.one : t.two);
            const rd = tp === 1 ? readFigure(read.bytes, r.one_ms, r.one_split_ms) : readFigure(read.bytes, r.two_ms, r.two_split_ms);
            rows.push({
              matrix: c.matrix, split: c.split, m, k: c.k, n: c.n, tp, median_ms: ms, gbs: gbs(bytes, ms),
              read_ms: rd.median_ms, read_gbs: rd.gbs, read_streams: rd.streams, vs_read: +(rd.median_ms / ms).toFixed(3),
            });
          }
        } finally {
          one.close();
          two.close();
        }
      }
    } finally {
      read.close();
    }
  }
  return rows;
}

/** Turns of the FMA peak loop per run: 10 multiply-adds of 4 lanes each. */
const PEAK_TURNS = 100_000;

/** Median ms per run of one worker's job, over `samples` samples (after the reps' warm-up). */
async function medianMs(t: Threads, samples: number): Promise<number> {
  const reps = await t.reps();
  const ms: number[] = [];
  for (let s = 0; s < samples; s++) ms.push(await t.time(reps));
  return median(ms);
}

/** GOPS (or GFLOP/s) of one thread's job doing `ops` operations a run. */
async function rateOf(req: CpuBenchRequest, ops: number, samples: number): Promise<number> {
  const t = new Threads(1);
  try {
    await t.setup(() => req);
    return ops / (await medianMs(t, samples)) / 1e6;
  } finally {
    t.close();
  }
}

/** stories110M's sizes (dim d, hidden h), samples, prefill's chunk of rows and peak turns; `smoke`: tiny ones. */
const gemmSizes = (smoke: boolean) => ({
  d: smoke ? 64 : 768, h: smoke ? 128 : 2048, samples: smoke ? 1 : 5, m: smoke ? 16 : 64, turns: smoke ? 1000 : PEAK_TURNS,
});

/** stories110M's TP 2 shard shapes (dim d, hidden h): column-split wqkv and w13, row-split wo and w2. */
const tp2Shapes = (d: number, h: number) => [
  { matrix: 'wqkv', k: d, n: (3 * d) / 2 },
  { matrix: 'wo', k: d / 2, n: d },
  { matrix: 'w13', k: d, n: h },
  { matrix: 'w2', k: h / 2, n: d },
];

/**
 * One core's 128-bit FMA peak (fma-peak.wat) and, on one thread, the CPU GEMM (src/cpu/gemm.ts)
 * beside the small-m panel matmul (src/cpu/panel.ts, PANEL_MAX_M rows a call) on stories110M's
 * TP 2 shard shapes (dim 768, hidden 2048) for prefill's chunk of 64 rows, f32 and f16 panel
 * weights. `smoke`: tiny shapes, one sample.
 */
export async function benchGemm(smoke: boolean): Promise<CpuGemmFigures> {
  const { d, h, samples, m, turns } = gemmSizes(smoke);
  const peak = await rateOf({ kind: 'peak', turns }, 80 * turns, samples);
  const rows: CpuGemmRow[] = [];
  for (const dtype of ['f32', 'f16'] as const) {
    for (const c of tp2Shapes(d, h)) {
      const gflops: Record<'gemm' | 'panel', number> = { gemm: 0, panel: 0 };
      for (const via of ['gemm', 'panel'] as const) gflops[via] = await rateOf({ kind: 'panel', via, dtype, m, k: c.k, n: c.n }, 2 * m * c.k * c.n, samples);
      rows.push({
        matrix: c.matrix, dtype, m, k: c.k, n: c.n, gemm_gflops: +gflops.gemm.toFixed(2), panel_gflops: +gflops.panel.toFixed(2),
        vs_peak: +(gflops.gemm / peak).toFixed(3),
      });
    }
  }
  return { peak_gflops: +peak.toFixed(2), rows };
}

/**
 * One core's FMA and integer dot peaks (fma-peak.wat, dot-peak.wat) and, on one thread, the
 * Q8_0/Q4_0 kernels on stories110M's TP 2 shard shapes: the small-m kernels (src/cpu/quant.ts) at
 * m 1 (decode) and at prefill's chunk of 64 rows, and the quantised GEMM (src/cpu/qgemm.ts) at 64,
 * with int8 activations and weight-only. `smoke`: tiny shapes, one sample.
 */
export async function benchQuantGemm(smoke: boolean): Promise<CpuQuantGemmFigures> {
  const { d, h, samples, m, turns } = gemmSizes(smoke);
  const relaxed = relaxedSimdAvailable();
  const peaks = {
    fma: await rateOf({ kind: 'peak', turns }, 80 * turns, samples),
    dot_i16: await rateOf({ kind: 'dotPeak', op: 'i16', turns }, 160 * turns, samples),
    dot_i8: relaxed ? await rateOf({ kind: 'dotPeak', op: 'i8', turns }, 320 * turns, samples) : undefined,
  };
  const rows: CpuQuantGemmRow[] = [];
  for (const dtype of ['q8_0', 'q4_0'] as const) {
    for (const activations of ['int8', 'f32'] as const) {
      for (const c of tp2Shapes(d, h)) {
        const gops = async (via: 'gemm' | 'small', rowsOf: number): Promise<number> =>
          +(await rateOf({ kind: 'quant', via, dtype, activations, m: rowsOf, k: c.k, n: c.n }, 2 * rowsOf * c.k * c.n, samples)).toFixed(2);
        const peak = activations === 'f32' ? 'fma' : dtype === 'q4_0' && relaxed ? 'dot_i8' : 'dot_i16';
        const row = { matrix: c.matrix, dtype, activations, m, k: c.k, n: c.n, small_m1_gops: await gops('small', 1), small_gops: await gops('small', m), gemm_gops: await gops('gemm', m) };
        rows.push({ ...row, peak, vs_peak: +(row.gemm_gops / peaks[peak]!).toFixed(3) });
      }
    }
  }
  const r = (v: number) => +v.toFixed(2);
  return { fma_gflops: r(peaks.fma), dot_i16_gops: r(peaks.dot_i16), ...(peaks.dot_i8 !== undefined && { dot_i8_gops: r(peaks.dot_i8) }), rows };
}
