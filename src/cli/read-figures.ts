/**
 * The memory roofline's figures from its samples (shared by the page, which measures them, and
 * `bench generate`, which measures them round by round). Pure: no browser or Node imports.
 */
import { median } from '../collective/bench.js';

/** One thread's WebAssembly SIMD read of `bytes`, and two threads' read of a half each at once. */
export interface WasmReadFigures {
  bytes: number;
  one_thread: { median_ms: number; gbs: number };
  two_threads: { median_ms: number; gbs: number };
}

/** Ms per read of all the bytes: one thread alone, and two threads at once (the slower one's). */
export interface ReadSamples {
  one_ms: number[];
  two_ms: number[];
}

export const gbs = (bytes: number, ms: number): number => +(bytes / (ms * 1e6)).toFixed(3);

export function readFigures(bytes: number, t: ReadSamples): WasmReadFigures {
  const one = median(t.one_ms);
  const two = median(t.two_ms);
  return { bytes, one_thread: { median_ms: +one.toFixed(4), gbs: gbs(bytes, one) }, two_threads: { median_ms: +two.toFixed(4), gbs: gbs(bytes, two) } };
}
