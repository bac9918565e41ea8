/**
 * The memory roofline's figures from its samples (shared by the page, which measures them, and
 * `bench generate`, which measures them round by round). Pure: no browser or Node imports.
 */
import { median } from '../collective/bench.js';

/**
 * A read of all the bytes by one or two threads at once: the faster of two access patterns, each
 * thread's bytes as one stream (`read`) or as two streams of its halves (`read2`), since which one
 * reads faster depends on the machine.
 */
export interface ReadFigure {
  median_ms: number;
  gbs: number;
  /** The pattern of median_ms. */
  streams: 1 | 2;
  /** Each pattern's rate. */
  one_stream_gbs: number;
  two_streams_gbs: number;
}

/** One thread's WebAssembly SIMD read of `bytes`, and two threads' read of a half each at once. */
export interface WasmReadFigures {
  bytes: number;
  one_thread: ReadFigure;
  two_threads: ReadFigure;
}

/**
 * Ms per read of all the bytes: one thread alone, and two threads at once (the slower one's),
 * each thread reading its bytes as one stream and (`_split`) as two.
 */
export interface ReadSamples {
  one_ms: number[];
  two_ms: number[];
  one_split_ms: number[];
  two_split_ms: number[];
}

export const gbs = (bytes: number, ms: number): number => +(bytes / (ms * 1e6)).toFixed(3);

/** The faster pattern's median (of one-stream samples `a` and two-stream samples `b`). */
export function readFigure(bytes: number, a: number[], b: number[]): ReadFigure {
  const one = median(a);
  const two = median(b);
  const ms = Math.min(one, two);
  return { median_ms: +ms.toFixed(4), gbs: gbs(bytes, ms), streams: two < one ? 2 : 1, one_stream_gbs: gbs(bytes, one), two_streams_gbs: gbs(bytes, two) };
}

export function readFigures(bytes: number, t: ReadSamples): WasmReadFigures {
  return { bytes, one_thread: readFigure(bytes, t.one_ms, t.one_split_ms), two_threads: readFigure(bytes, t.two_ms, t.two_split_ms) };
}

/** The samples of several rounds as one set. */
export function concatReads(reads: ReadSamples[]): ReadSamples {
  return {
    one_ms: reads.flatMap((r) => r.one_ms), two_ms: reads.flatMap((r) => r.two_ms),
    one_split_ms: reads.flatMap((r) => r.one_split_ms), two_split_ms: reads.flatMap((r) => r.two_split_ms),
  };
}
