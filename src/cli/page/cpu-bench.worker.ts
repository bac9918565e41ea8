/**
 * One thread of the CPU-rank benchmarks, in a real dedicated Web Worker as a CPU rank is: it
 * holds either a matmul (its own `CpuKernels` memory, as a rank holds its shard) or a range of a
 * shared memory to read, and times `reps` runs of it once every thread of the group has arrived.
 */
import { serializeError } from '../../errors.js';
import { CpuKernels, relaxedSimdAvailable, type CpuWeightDtype } from '../../cpu/kernels.js';
import { CpuGemm } from '../../cpu/gemm.js';
import { CpuPanel, PANEL_MAX_M, panelBytes } from '../../cpu/panel.js';
import { WASM_READ_BASE64 } from './wasm-read-wasm.js';
import { FMA_PEAK_RELAXED_WASM_BASE64, FMA_PEAK_WASM_BASE64 } from './fma-peak-wasm.js';
import { DOT_PEAK_RELAXED_WASM_BASE64, DOT_PEAK_WASM_BASE64 } from './dot-peak-wasm.js';
import { CpuQuantKernels, type CpuQuantDtype } from '../../cpu/quant.js';
import { CpuQuantGemm } from '../../cpu/qgemm.js';
import { quantizeQ8 } from '../../model/reference-q8.js';
import { quantizeQ4 } from '../../model/reference-q4.js';

export type CpuBenchRequest =
  | { kind: 'matmul'; m: number; k: number; n: number }
  /** A matmul of dtype panel weights through `via`: the GEMM, or the small-m panel matmul (PANEL_MAX_M rows a call). */
  | { kind: 'panel'; via: 'gemm' | 'panel'; dtype: CpuWeightDtype; m: number; k: number; n: number }
  /** `turns` turns of the FMA peak loop (fma-peak.wat, in the kernels' default build). */
  | { kind: 'peak'; turns: number }
  /** `turns` turns of an integer dot peak loop (dot-peak.wat): i16 dots, or relaxed i8 × i7 ones (relaxed build only). */
  | { kind: 'dotPeak'; op: 'i16' | 'i8'; turns: number }
  /** A Q8_0/Q4_0 matmul through `via` (the quantised GEMM or the small-m kernels), weight-only or on int8 rows. */
  | { kind: 'quant'; via: 'gemm' | 'small'; dtype: CpuQuantDtype; activations: 'f32' | 'int8'; m: number; k: number; n: number }
  /** A read of `bytes` at `at` as one stream, or as two streams of its halves (wasm-read.wat's read2). */
  | { kind: 'read'; memory: WebAssembly.Memory; at: number; bytes: number; streams: 1 | 2 }
  /** `arrived` is a shared counter: each thread adds one and spins until all `threads` have. */
  | { kind: 'run'; reps: number; arrived: Int32Array; threads: number };

let job: (() => void) | undefined;
/** The reads' sums, kept in a module variable so that no read is dead code. */
let sink = 0;

function matmulJob(m: number, k: number, n: number): () => void {
  const kn = CpuKernels.create();
  const w = kn.alloc(n * k * 4);
  const x = kn.alloc(m * k * 4);
  const y = kn.alloc(m * n * 4);
  // Seeded values in [-0.5, 0.5): written, so that every page of the weights is really committed.
  const wv = kn.f32(w, n * k);
  for (let i = 0; i < wv.length; i++) wv[i] = ((i * 2654435761) >>> 0) / 2 ** 32 - 0.5;
  kn.f32(x, m * k).fill(0.5);
  return () => kn.matmul({ y, x, w, dtype: 'f32', m, k, n });
}

function panelJob(via: 'gemm' | 'panel', dtype: CpuWeightDtype, m: number, k: number, n: number): () => void {
  const kn = CpuKernels.create();
  const g = CpuGemm.create(kn, k);
  const p = CpuPanel.create(kn, k, g.scratch);
  const w = kn.alloc(panelBytes(n, k, dtype));
  const x = kn.alloc(m * k * 4);
  const y = kn.alloc(m * n * 4);
  // Seeded weights in [-0.5, 0.5) (halves of them for f16), written straight into the panels (their
  // order does not matter to the timing) so that every page is committed.
  const wv = dtype === 'f32' ? kn.f32(w, n * k) : kn.u16(w, n * k);
  for (let i = 0; i < wv.length; i++) wv[i] = dtype === 'f32' ? ((i * 2654435761) >>> 0) / 2 ** 32 - 0.5 : 0x3000 + (((i * 2654435761) >>> 0) % 0x800);
  kn.f32(x, m * k).fill(0.5);
  const a = { y, x, w, dtype, layout: 'panel' as const, m, k, n };
  if (via === 'gemm') return () => g.gemm(a);
  return () => {
    for (let r = 0; r < m; r += PANEL_MAX_M) p.matmul({ ...a, y: y + r * n * 4, x: x + r * k * 4, m: Math.min(PANEL_MAX_M, m - r) });
  };
}

function peakJob(turns: number): () => void {
  const base64 = relaxedSimdAvailable() ? FMA_PEAK_RELAXED_WASM_BASE64 : FMA_PEAK_WASM_BASE64;
  const inst = new WebAssembly.Instance(new WebAssembly.Module(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))), {});
  const peak = inst.exports.peak as (turns: number, s: number) => number;
  return () => {
    sink += peak(turns, 0.001);
  };
}

function dotPeakJob(op: 'i16' | 'i8', turns: number): () => void {
  const base64 = relaxedSimdAvailable() ? DOT_PEAK_RELAXED_WASM_BASE64 : DOT_PEAK_WASM_BASE64;
  const ex = new WebAssembly.Instance(new WebAssembly.Module(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))), {}).exports;
  const peak = (op === 'i16' ? ex.dotI16 : ex.dotI8) as ((turns: number, seed: number) => number) | undefined;
  if (!peak) throw new Error('cpu-bench worker: the i8 dot peak needs relaxed SIMD');
  return () => {
    sink += peak(turns, 1);
  };
}

function quantJob(r: Extract<CpuBenchRequest, { kind: 'quant' }>): () => void {
  const { m, k, n, dtype } = r;
  const kn = CpuKernels.create();
  const qk = CpuQuantKernels.create(kn);
  const g = CpuQuantGemm.create(kn, m, k);
  // Seeded values in [-0.5, 0.5), quantised as a GGUF file holds them.
  const v = Float32Array.from({ length: n * k }, (_, i) => ((i * 2654435761) >>> 0) / 2 ** 32 - 0.5);
  const t = dtype === 'q8_0' ? quantizeQ8(v, n * k, 32) : quantizeQ4(v, n * k);
  const w = kn.alloc(CpuQuantKernels.tiledBytes(n, k, dtype));
  qk.tile(w, [t], k, dtype);
  const x = kn.alloc(m * k * 4);
  const xv = kn.f32(x, m * k);
  for (let i = 0; i < xv.length; i++) xv[i] = ((i * 40503) % 1000) / 500 - 1;
  const xa = kn.alloc(CpuQuantKernels.activationBytes(m, k));
  qk.quantize(xa, x, m, k);
  const a = { y: kn.alloc(m * n * 4), w, dtype, m, k, n };
  const mm = r.via === 'gemm' ? g : qk;
  // int8: the rows are quantised once; the matmul alone is timed.
  return r.activations === 'int8' ? () => mm.matmulA8({ ...a, xa }) : () => mm.matmul({ ...a, x });
}

/** read2's chunk: two interleaved streams of 1 KB turns. */
const READ2_CHUNK = 1024;

function readJob(memory: WebAssembly.Memory, at: number, bytes: number, streams: 1 | 2): () => void {
  const bin = Uint8Array.from(atob(WASM_READ_BASE64), (c) => c.charCodeAt(0));
  const ex = new WebAssembly.Instance(new WebAssembly.Module(bin), { env: { memory } }).exports;
  const read = ex.read as (at: number, bytes: number) => number;
  const read2 = ex.read2 as (at: number, bytes: number, chunk: number) => number;
  const once = streams === 1 ? () => read(at, bytes) : () => read2(at, bytes, READ2_CHUNK);
  return () => {
    sink += once();
  };
}

/** Ms for `reps` runs, timed from the moment the whole group has arrived. */
function run(reps: number, arrived: Int32Array, threads: number): number {
  // Arrive before any check can throw, so that no other thread of the group spins forever.
  Atomics.add(arrived, 0, 1);
  if (!job) throw new Error('cpu-bench worker: run before matmul or read');
  while (Atomics.load(arrived, 0) < threads) {
    // Spin: the group starts within microseconds of each other.
  }
  const t0 = performance.now();
  for (let r = 0; r < reps; r++) job();
  return performance.now() - t0;
}

function handle(m: CpuBenchRequest): unknown {
  switch (m.kind) {
    case 'matmul':
      job = matmulJob(m.m, m.k, m.n);
      return null;
    case 'read':
      job = readJob(m.memory, m.at, m.bytes, m.streams);
      return null;
    case 'panel':
      job = panelJob(m.via, m.dtype, m.m, m.k, m.n);
      return null;
    case 'peak':
      job = peakJob(m.turns);
      return null;
    case 'dotPeak':
      job = dotPeakJob(m.op, m.turns);
      return null;
    case 'quant':
      job = quantJob(m);
      return null;
    case 'run':
      return run(m.reps, m.arrived, m.threads);
  }
}

self.onmessage = (e: MessageEvent<CpuBenchRequest>) => {
  try {
    const value = handle(e.data);
    self.postMessage({ ok: true, value });
  } catch (err) {
    self.postMessage({ ok: false, error: serializeError(err) });
  }
};
