/** The report of `bench allreduce` (shared by the browser harness and the Node CLI; types only). */
import type { AllReduceAlgorithm, AllReduceChoice } from './all-reduce.js';

export interface AllReduceBenchOptions {
  /** World sizes to measure, e.g. [2, 4]. */
  workers: number[];
  /** Vector lengths in floats, e.g. [2048, 65536, 4194304]. */
  sizes: number[];
  /** Algorithms to time; default both and `auto`. */
  algorithms?: AllReduceChoice[];
  /** Timed samples per case (median reported); default 20. */
  samples?: number;
  /** Spin iterations of the communicators (default: the library default). */
  spin?: number;
  /**
   * Also time `auto` in place (output = input), as nccl-tests report in-place beside
   * out-of-place; default true.
   */
  inPlace?: boolean;
  /** Also time the copy floor (`baselines.copy_floor`) per world size > 1 and size; default true. */
  copyFloor?: boolean;
  /** Tiny and quick, for the test suite: 3 samples, small batches; numbers are meaningless. */
  smoke?: boolean;
}

export interface AllReduceBenchResult {
  workers: number;
  floats: number;
  /** What was asked for (`auto` included). */
  algorithm: AllReduceChoice;
  /** What ran (differs from `algorithm` only for `auto`). */
  picked: AllReduceAlgorithm;
  /**
   * True when the output was the input array (nccl-tests' in-place), false for a separate array
   * (absent in records made before in-place rows, which were all out of place).
   */
  in_place?: boolean;
  /** Median over samples of the time per all-reduce, input array to result array, slowest rank. */
  median_us: number;
  /** nccl-tests bus bandwidth: (floats·4 B / time) · 2(N−1)/N, in GB/s (1e9 B/s). */
  busbw_gbs: number;
  /** All-reduces timed back to back per sample (the 5 µs timer resolution needs ≥ 1000 for small ones). */
  batch: number;
  samples: number;
}

export interface PostMessageBaseline {
  workers: number;
  floats: number;
  median_us: number;
}

/**
 * The copies an all-reduce of a caller's arrays cannot avoid, timed alone with every rank copying
 * at once (input → slot → output, no sums, no waits; `timeCopyFloor`), and the bus bandwidth an
 * all-reduce as fast as those copies would have. Both ranks' copies share one memory bus, so
 * this, not the one-thread memcpy, bounds the out-of-place all-reduce.
 */
export interface CopyFloorBaseline {
  workers: number;
  floats: number;
  /** Output = input, the floor of the in-place rows. */
  in_place: boolean;
  median_us: number;
  busbw_gbs: number;
}

export interface AllReduceBenchReport {
  results: AllReduceBenchResult[];
  baselines: {
    /** Single-thread SharedArrayBuffer → SharedArrayBuffer Float32Array.set, GB/s of bytes copied. */
    memcpy_gbs: number;
    /** All-reduce by postMessage: ranks post to rank 0 over MessageChannels, it sums and posts back. */
    postmessage: PostMessageBaseline[];
    /** Per world size > 1 and size (absent in records made before it was measured). */
    copy_floor?: CopyFloorBaseline[];
  };
  /** Spin iterations used, hardware threads of the machine, and notes. */
  meta: {
    spin: number;
    hardwareConcurrency: number;
    /** How the ranks add floats: WebAssembly SIMD over a shared Memory, or the scalar JavaScript loop (absent in records made before the SIMD sums). */
    sums?: 'wasm-simd' | 'js';
    note: string;
  };
}
