/**
 * One thread of the CPU-rank benchmarks, in a real dedicated Web Worker as a CPU rank is: it
 * holds either a matmul (its own `CpuKernels` memory, as a rank holds its shard) or a range of a
 * shared memory to read, and times `reps` runs of it once every thread of the group has arrived.
 */
import { serializeError } from '../../errors.js';
import { CpuKernels } from '../../cpu/kernels.js';
import { WASM_READ_BASE64 } from './wasm-read-wasm.js';

export type CpuBenchRequest =
  | { kind: 'matmul'; m: number; k: number; n: number }
  | { kind: 'read'; memory: WebAssembly.Memory; at: number; bytes: number }
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

function readJob(memory: WebAssembly.Memory, at: number, bytes: number): () => void {
  const bin = Uint8Array.from(atob(WASM_READ_BASE64), (c) => c.charCodeAt(0));
  const inst = new WebAssembly.Instance(new WebAssembly.Module(bin), { env: { memory } });
  const read = inst.exports.read as (at: number, bytes: number) => number;
  return () => {
    sink += read(at, bytes);
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
      job = readJob(m.memory, m.at, m.bytes);
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
