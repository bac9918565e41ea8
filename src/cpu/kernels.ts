/**
 * The CPU rank's kernels (kernels.wat, WebAssembly SIMD) on one growable `WebAssembly.Memory`:
 * the shard, the activations and the KV cache all live in it, and each op takes byte offsets
 * into it (`alloc` hands them out). Weights are f32 or f16 (IEEE halves, widened per load);
 * activations and sums are f32.
 */
import { CPU_KERNELS_WASM_BASE64 } from './kernels-wasm.js';

/** How a weight matrix or embedding table stores its values. */
export type CpuWeightDtype = 'f32' | 'f16';

interface KernelExports {
  matmul(y: number, x: number, xStride: number, w: number, m: number, k: number, n: number, flags: number, bias: number, dtype: number): void;
  rmsnorm(y: number, x: number, g: number, m: number, dim: number, eps: number): void;
  add(y: number, x: number, n: number): void;
  siluMul(y: number, a: number, b: number, n: number, m: number, xStride: number): void;
  embed(y: number, table: number, tokens: number, m: number, dim: number, dtype: number): void;
  rope(x: number, rowStride: number, nHeads: number, headSize: number, cos: number, sin: number, positions: number, m: number, style: number): void;
  kvWrite(src: number, rowStride: number, nKv: number, headSize: number, positions: number, slots: number, m: number, cache: number, maxSeq: number): void;
  attention(
    out: number, q: number, qStride: number, k: number, v: number, maxSeq: number, nKv: number, positions: number, slots: number,
    m: number, nHeads: number, headSize: number, kvMul: number, headOffset: number, scores: number,
  ): void;
}

export interface MatmulArgs {
  y: number; // (m, n) f32
  x: number; // (m, k) f32, rows xStride floats apart
  xStride?: number; // default k
  w: number; // (n, k) of dtype
  dtype: CpuWeightDtype;
  m: number;
  k: number;
  n: number;
  /** y += the product (the row-parallel form into the residual) instead of y = it. */
  accumulate?: boolean;
  /** (n,) f32 added to the product (before it is accumulated). */
  bias?: number;
}

export interface AttentionArgs {
  out: number; // (m, nHeads·headSize)
  q: number; // (m, ·) query heads at the start of each row, rows qStride floats apart
  qStride: number;
  k: number; // (slots, nKv, maxSeq, headSize) f32, as kvWrite lays it out
  v: number;
  maxSeq: number;
  nKv: number;
  positions: number; // (m,) i32
  slots: number; // (m,) i32
  m: number;
  nHeads: number;
  headSize: number;
  /** Query head h reads kv head floor((h + headOffset) / kvMul), as the GPU backend's kvGroup. */
  kvMul: number;
  headOffset: number;
  scores: number; // scratch, maxSeq f32
}

let compiled: WebAssembly.Module | undefined;

function kernelModule(): WebAssembly.Module {
  compiled ??= new WebAssembly.Module(Uint8Array.from(atob(CPU_KERNELS_WASM_BASE64), (c) => c.charCodeAt(0)));
  return compiled;
}

const PAGE = 65536;
/** wasm32's 4 GiB, in pages. */
const MAX_PAGES = 65536;

/** Math.exp for the kernels: they round its f64 result to f32, as the oracle does. */
const exp = (x: number): number => Math.exp(x);

export class CpuKernels {
  private top = 16; // offset 0 stays unused, so no buffer starts at a null address
  private constructor(
    readonly memory: WebAssembly.Memory,
    private readonly k: KernelExports,
  ) {}

  /** Kernels on a fresh memory of `initialBytes` (rounded up to pages), grown by `alloc`. */
  static create(initialBytes = PAGE): CpuKernels {
    const memory = new WebAssembly.Memory({ initial: Math.max(1, Math.ceil(initialBytes / PAGE)), maximum: MAX_PAGES });
    const inst = new WebAssembly.Instance(kernelModule(), { env: { memory, exp } });
    return new CpuKernels(memory, inst.exports as unknown as KernelExports);
  }

  /** A fresh 16-byte-aligned region of `bytes`, growing the memory to fit. */
  alloc(bytes: number): number {
    const at = this.top;
    const end = at + Math.ceil(bytes / 16) * 16;
    const have = this.memory.buffer.byteLength;
    if (end > have) {
      const pages = Math.ceil((end - have) / PAGE);
      if (have / PAGE + pages > MAX_PAGES) throw new RangeError(`CPU kernels: ${end} bytes do not fit one WebAssembly memory (4 GiB)`);
      this.memory.grow(pages);
    }
    this.top = end;
    return at;
  }

  /** Where the next `alloc` starts: `release(mark)` frees everything allocated since. */
  mark(): number {
    return this.top;
  }

  release(mark: number): void {
    if (mark > this.top) throw new RangeError(`CPU kernels: release(${mark}) is past the allocations (${this.top})`);
    this.top = mark;
  }

  /** Views of the memory; make them after the last `alloc` (growing replaces the buffer). */
  f32(at: number, n: number): Float32Array {
    return new Float32Array(this.memory.buffer, at, n);
  }

  u16(at: number, n: number): Uint16Array {
    return new Uint16Array(this.memory.buffer, at, n);
  }

  i32(at: number, n: number): Int32Array {
    return new Int32Array(this.memory.buffer, at, n);
  }

  /** y = x·wᵀ (+ bias), or y += it: a gemv for m = 1, otherwise each weight row read once per four rows. */
  matmul(a: MatmulArgs): void {
    const flags = (a.accumulate ? 1 : 0) | (a.bias !== undefined ? 2 : 0);
    this.k.matmul(a.y, a.x, a.xStride ?? a.k, a.w, a.m, a.k, a.n, flags, a.bias ?? 0, a.dtype === 'f16' ? 1 : 0);
  }

  /** Per row of dim: y = g·(x / √(Σx²/dim + eps)); y may be x. */
  rmsnorm(y: number, x: number, g: number, m: number, dim: number, eps: number): void {
    this.k.rmsnorm(y, x, g, m, dim, eps);
  }

  /** y[i] += x[i] for i < n. */
  add(y: number, x: number, n: number): void {
    this.k.add(y, x, n);
  }

  /** y (m, n) = silu(a)·b, a and b rows xStride floats apart. */
  siluMul(y: number, a: number, b: number, n: number, m: number, xStride = n): void {
    this.k.siluMul(y, a, b, n, m, xStride);
  }

  /** y[r] = table[tokens[r]] for r < m, rows of dim; tokens (m,) i32. */
  embed(y: number, table: number, tokens: number, m: number, dim: number, dtype: CpuWeightDtype): void {
    this.k.embed(y, table, tokens, m, dim, dtype === 'f16' ? 1 : 0);
  }

  /** Rotates nHeads heads at the start of each row (rowStride floats apart) by positions (m,) i32; cos/sin (seq, headSize/2). */
  rope(x: number, rowStride: number, nHeads: number, headSize: number, cos: number, sin: number, positions: number, m: number, style: 'interleaved' | 'rotate_half'): void {
    this.k.rope(x, rowStride, nHeads, headSize, cos, sin, positions, m, style === 'rotate_half' ? 1 : 0);
  }

  /** Copies nKv heads at the start of each row into the cache (slot, nKv, maxSeq, headSize) at the row's slot and position. */
  kvWrite(src: number, rowStride: number, nKv: number, headSize: number, positions: number, slots: number, m: number, cache: number, maxSeq: number): void {
    this.k.kvWrite(src, rowStride, nKv, headSize, positions, slots, m, cache, maxSeq);
  }

  /** Causal attention of each row over positions 0..positions[r] of its slot. */
  attention(a: AttentionArgs): void {
    this.k.attention(a.out, a.q, a.qStride, a.k, a.v, a.maxSeq, a.nKv, a.positions, a.slots, a.m, a.nHeads, a.headSize, a.kvMul, a.headOffset, a.scores);
  }
}
