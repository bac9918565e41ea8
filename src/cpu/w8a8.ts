/**
 * runq.c's W8A8 matmul on a CPU rank (w8a8.wat): int8 weights and activations in groups, each
 * with an f32 scale, summed group by group as runq.c sums them, so the result is runq.c's to
 * the bit. It runs on a `CpuKernels` memory, whose `alloc` hands out its operands.
 */
import { W8A8_WASM_BASE64 } from './w8a8-wasm.js';
import type { CpuKernels } from './kernels.js';
import { InvalidArgumentError } from '../errors.js';
import { wasmBytes } from './wasm-variants.js';

/** How the sum meets y: `set` y = Σ; `add` y += Σ (runq.c's residual add); `continue` Σ starts from y. */
export type W8A8Into = 'set' | 'add' | 'continue';
const MODE: Record<W8A8Into, number> = { set: 0, add: 1, continue: 2 };

/** A group-quantised operand in the memory: values (rows, k) int8 at `q`, scales (rows, k / gs) f32 at `s`. */
export interface W8A8Operand {
  q: number;
  s: number;
}

export interface W8A8MatmulArgs {
  y: number; // (m, n) f32
  x: W8A8Operand; // (m, k)
  w: W8A8Operand; // (n, k), W[out][in]
  m: number;
  k: number;
  n: number;
  groupSize: number;
  into: W8A8Into;
}

interface Exports {
  matmul(y: number, xq: number, xs: number, wq: number, ws: number, m: number, k: number, n: number, gs: number, mode: number): void;
}

let compiled: WebAssembly.Module | undefined;

export class W8A8Matmul {
  private constructor(private readonly k: Exports) {}

  /** The matmul on `kernels`' memory. */
  static on(kernels: CpuKernels): W8A8Matmul {
    compiled ??= new WebAssembly.Module(wasmBytes(W8A8_WASM_BASE64));
    const inst = new WebAssembly.Instance(compiled, { env: { memory: kernels.memory } });
    return new W8A8Matmul(inst.exports as unknown as Exports);
  }

  run(a: W8A8MatmulArgs): void {
    if (a.groupSize % 4 !== 0 || a.k % a.groupSize !== 0) throw new InvalidArgumentError(`W8A8 matmul: expected a group size that is a multiple of 4 and divides k = ${a.k}, got ${a.groupSize}`);
    this.k.matmul(a.y, a.x.q, a.x.s, a.w.q, a.w.s, a.m, a.k, a.n, a.groupSize, MODE[a.into]);
  }
}

/** Int8 values at `at` in `kernels`' memory (a fresh view: the memory may have grown). */
export function int8s(kernels: CpuKernels, at: number, n: number): Int8Array {
  return new Int8Array(kernels.memory.buffer, at, n);
}
