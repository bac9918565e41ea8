/**
 * `webgpu-tp bench kernels`: times the matmul kernels, a plain-JS matmul and tfjs-webgpu's
 * `tf.matMul` on the same page, the readback helper against the plain mapAsync path, and the CPU
 * ranks' matmuls at TP 1 and 2 beside a WebAssembly read of the same bytes, the CPU GEMM beside one
 * core's measured 128-bit FMA peak, the quantised kernels beside its integer dot peaks, in
 * headless Chromium (`--enable-webgpu-developer-features` for full-precision timestamps).
 */
import { openHarness } from './browser.js';

export interface KernelBenchRow {
  kernel: string;
  m: number;
  k: number;
  n: number;
  median_ms: number;
  gflops: number;
}

/** A matmul as TP shards on devices sharing the adapter, against the whole matrix on one device. */
export interface ShardBenchRow {
  /** The stories110M matrix it has the shape of. */
  matrix: string;
  split: 'row' | 'col';
  m: number;
  k: number;
  n: number;
  tp: number;
  /** Median wall ms per dispatch of the whole matrix on one device. */
  full_ms: number;
  /** Median wall ms per dispatch with every rank's shard dispatched at once on its own device. */
  shards_ms: number;
  /** shards_ms / full_ms: above 1, what sharding costs on a shared adapter. */
  ratio: number;
}

/** A CPU-rank matmul (src/cpu/kernels.ts, f32 weights) on a stories110M shape, beside the read of its bytes. */
export interface CpuMatmulRow {
  matrix: string;
  split: 'row' | 'col';
  m: number;
  k: number;
  n: number;
  /** 1: the whole matrix on one thread; 2: its two shards on two threads at once. */
  tp: 1 | 2;
  /** Median ms of one matmul (at TP 2 the slower thread's). */
  median_ms: number;
  /** The whole matrix's weight bytes over median_ms. */
  gbs: number;
  /** The same bytes read by `tp` threads (WebAssembly SIMD loads only), the faster of one or two streams a thread. */
  read_ms: number;
  read_gbs: number;
  read_streams: 1 | 2;
  /** read_ms / median_ms: the matmul's share of the memory roofline. */
  vs_read: number;
}

/** The CPU GEMM on one thread beside the small-m panel matmul (same panel weights, one shape). */
export interface CpuGemmRow {
  /** The stories110M TP 2 shard it has the shape of. */
  matrix: string;
  dtype: 'f32' | 'f16';
  m: number;
  k: number;
  n: number;
  gemm_gflops: number;
  /** The panel matmul over the same m rows, PANEL_MAX_M of them a call. */
  panel_gflops: number;
  /** gemm_gflops over the measured 128-bit FMA peak. */
  vs_peak: number;
}

export interface CpuGemmFigures {
  /** One core's f32x4 multiply-add peak (independent chains, in the kernels' build), GFLOP/s. */
  peak_gflops: number;
  rows: CpuGemmRow[];
}

/** A Q8_0/Q4_0 matmul on one thread: the small-m kernels at m 1 and m, and the quantised GEMM at m. */
export interface CpuQuantGemmRow {
  /** The stories110M TP 2 shard it has the shape of. */
  matrix: string;
  dtype: 'q8_0' | 'q4_0';
  activations: 'f32' | 'int8';
  m: number;
  k: number;
  n: number;
  /** GOPS: 2·m·k·n over the median time (a multiply-add is 2 ops, integer or float). */
  small_m1_gops: number;
  small_gops: number;
  gemm_gops: number;
  /** The peak the GEMM's inner loop is bound by: 'fma' (weight-only), 'dot_i16' (int8 via i16 pairs) or 'dot_i8' (Q4_0 × int8, relaxed). */
  peak: 'fma' | 'dot_i16' | 'dot_i8';
  /** gemm_gops over that peak. */
  vs_peak: number;
}

export interface CpuQuantGemmFigures {
  /** One core's peaks in the kernels' build, GOPS: f32x4 multiply-adds, and dot-then-add chains (dot-peak.wat). */
  fma_gflops: number;
  dot_i16_gops: number;
  /** Absent without relaxed SIMD. */
  dot_i8_gops?: number;
  rows: CpuQuantGemmRow[];
}

export interface KernelBenchReport {
  adapter: { vendor: string; architecture: string };
  /** Kernel variants this adapter uses, and the timings that chose them. */
  choices: { gemm: string; gemv: string; small?: string; measured: Record<string, number> };
  results: KernelBenchRow[];
  /** Every matmul variant the adapter can run, on the same shapes. */
  variants: KernelBenchRow[];
  /** Decode gemv (m = 1, square d × d) with f32 (the adapter's gemv), Q8_0 and Q4_0 weights (weight-only, groups of 32), and Q4_0 with int8 activations (gemv_q4_0_int8, W4A8): the best of 5 interleaved rounds. */
  quant?: KernelBenchRow[];
  baselines: { js: KernelBenchRow[]; tfjs: KernelBenchRow[] };
  /** Absent from results written before it existed. */
  roofline?: RooflineFigures;
  /** TP = 2 shards of stories110M's matrices on two devices of this adapter at once (absent before it existed). */
  shards?: ShardBenchRow[];
  /** CPU ranks' matmuls at TP 1 and 2 beside the memory roofline (absent before it existed). */
  cpu?: CpuMatmulRow[];
  /** The CPU GEMM for prefill beside one core's FMA peak (absent before it existed). */
  cpu_gemm?: CpuGemmFigures;
  /** The quantised kernels on CPU ranks (small-m and GEMM) beside one core's measured peaks (absent before it existed). */
  cpu_qgemm?: CpuQuantGemmFigures;
  /** Submit → data of 8 KB after a tiny dispatch, through the readback helper (median ms). */
  readback_ms: number;
  readback: {
    tiny: { helper: ReadbackFigures; plain: ReadbackFigures };
    /** After a gemv of ~4 ms (its GPU time in gpu_ms). */
    long: { helper: ReadbackFigures; learnt: ReadbackFigures; plain: ReadbackFigures; gpu_ms: number };
    /** The helper inside a dedicated worker (where the engine runs), after a tiny matmul. */
    worker_tiny_ms: number;
  };
}

/**
 * The read roofline: a kernel that only loads a d×d f32 matrix (d = 2048, the square gemv's
 * weights), and one JS thread summing the same floats. On an adapter bound by its loads, the GPU
 * read bounds a gemv of that size that loads the weights in one of the same patterns.
 */
export interface RooflineFigures {
  floats: number;
  /** The fastest of three read patterns (contiguous runs per invocation, interleaved, or the gemv's own). */
  gpu_read: { kernel: string; median_ms: number; gbs: number };
  js_read: { median_ms: number; gbs: number };
}

export interface ReadbackFigures {
  median_ms: number;
  p90_ms: number;
  pokes_per_read: number;
}

export interface KernelBenchOptions {
  /** Tiny sizes and few repetitions: checks the wiring, not the speed. */
  smoke?: boolean;
  /**
   * Kernels only (the chosen and every available variant): no JS, tfjs or readback figures.
   * Defaults to the environment's TP_BENCH_KERNELS_QUICK=1.
   */
  quick?: boolean;
}

export async function benchKernels(opts: KernelBenchOptions = {}): Promise<KernelBenchReport> {
  const h = await openHarness({ bench: true });
  try {
    const o = { smoke: !!opts.smoke, quick: opts.quick ?? process.env.TP_BENCH_KERNELS_QUICK === '1' };
    type Page = {
      tp: {
        kernels: { bench(o: { smoke: boolean; quick: boolean }): Promise<KernelBenchReport> };
        shards: { bench(smoke: boolean): Promise<ShardBenchRow[]> };
        cpu: {
          benchMatmuls(smoke: boolean): Promise<CpuMatmulRow[]>; benchGemm(smoke: boolean): Promise<CpuGemmFigures>;
          benchQuantGemm(smoke: boolean): Promise<CpuQuantGemmFigures>;
        };
      };
    };
    const report = await h.page.evaluate((x) => (window as unknown as Page).tp.kernels.bench(x), o);
    report.shards = await h.page.evaluate((smoke) => (window as unknown as Page).tp.shards.bench(smoke), o.smoke);
    report.cpu = await h.page.evaluate((smoke) => (window as unknown as Page).tp.cpu.benchMatmuls(smoke), o.smoke);
    report.cpu_gemm = await h.page.evaluate((smoke) => (window as unknown as Page).tp.cpu.benchGemm(smoke), o.smoke);
    report.cpu_qgemm = await h.page.evaluate((smoke) => (window as unknown as Page).tp.cpu.benchQuantGemm(smoke), o.smoke);
    return report;
  } catch (e) {
    const tail = h.console.slice(-20).join('\n');
    throw new Error(`${(e as Error).message}${tail ? `\npage console:\n${tail}` : ''}`);
  } finally {
    await h.close();
  }
}
