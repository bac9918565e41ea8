/**
 * The CPU rank's kernels (kernels.wat, WebAssembly SIMD) on one growable `WebAssembly.Memory`:
 * the shard, the activations and the KV cache all live in it, and each op takes byte offsets
 * into it (`alloc` hands them out). Weights are f32 or f16 (IEEE halves, widened per load);
 * activations and sums are f32.
 */
import { CPU_KERNELS_RELAXED_WASM_BASE64, CPU_KERNELS_WASM_BASE64 } from './kernels-wasm.js';
import { CpuMemoryError, InvalidArgumentError } from '../errors.js';
import { variantModules, wasmBytes, type CpuKernelVariant } from './wasm-variants.js';

/** How a weight matrix or embedding table stores its values. */
export type CpuWeightDtype = 'f32' | 'f16';

/**
 * The kernels' build: `relaxed` multiplies and adds with `f32x4.relaxed_madd` (fused where the
 * CPU has FMA), `simd` with SIMD128's mul then add. Each gives the same bits on every call.
 */
export type { CpuKernelVariant };

/** What a KV cache stores: f32, or halves (rounded to nearest even as they are written; attention computes in f32). */
export type CpuKvDtype = 'f32' | 'f16';

/**
 * How a matrix's rows lie in memory: `rows` (n, k) row-major; `panel` (f32 and f16: panel.ts
 * `writePanels`, multiplied by `CpuPanel` and the GEMM, not by `matmul`); or `tiled` (quantised
 * ones: quant.ts and kquant.ts `tile`).
 */
export type CpuWeightLayout = 'rows' | 'tiled' | 'panel';

interface KernelExports {
  matmul(y: number, x: number, xStride: number, w: number, m: number, k: number, n: number, flags: number, bias: number, dtype: number): void;
  rmsnorm(y: number, x: number, g: number, m: number, dim: number, eps: number): void;
  exp(x: number): number;
  expf(y: number, x: number, n: number): void;
  add(y: number, x: number, n: number): void;
  siluMul(y: number, a: number, b: number, n: number, m: number, xStride: number): void;
  embed(y: number, table: number, tokens: number, m: number, dim: number, dtype: number): void;
  rope(x: number, rowStride: number, nHeads: number, headSize: number, cos: number, sin: number, positions: number, m: number, style: number): void;
  kvWrite(src: number, rowStride: number, nKv: number, headSize: number, positions: number, slots: number, m: number, cache: number, maxSeq: number, dtype: number): void;
  attention(
    out: number, q: number, qStride: number, k: number, v: number, maxSeq: number, nKv: number, positions: number, slots: number,
    m: number, nHeads: number, headSize: number, kvMul: number, headOffset: number, dtype: number,
  ): void;
}

export interface MatmulArgs {
  y: number; // (m, n) f32
  x: number; // (m, k) f32, rows xStride floats apart
  xStride?: number; // default k
  w: number; // (n, k) of dtype
  dtype: CpuWeightDtype;
  /** Default `rows` (the kernels' matmul); `panel` for `CpuPanel` and the GEMM. */
  layout?: CpuWeightLayout;
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
  k: number; // (slots, nKv, maxSeq, headSize) of kvDtype, as kvWrite lays it out
  v: number;
  /** The caches' values: f32, or halves (default f32). */
  kvDtype?: CpuKvDtype;
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
}


/** f32x4.relaxed_madd of three zero vectors: it validates only where the engine has relaxed SIMD. */
const RELAXED_PROBE = wasmBytes('AGFzbQEAAAABBAFgAAADAgEACj4BPAD9DAAAAAAAAAAAAAAAAAAAAAD9DAAAAAAAAAAAAAAAAAAAAAD9DAAAAAAAAAAAAAAAAAAAAAD9hQIaCw==');

let relaxedSupport: boolean | undefined;

/** Whether this engine runs the relaxed variant (Chromium does; Node 20 only with --experimental-wasm-relaxed-simd). */
export function relaxedSimdAvailable(): boolean {
  relaxedSupport ??= WebAssembly.validate(RELAXED_PROBE);
  return relaxedSupport;
}

/** The flag bits every matmul entry of the CPU kernels takes: 1 accumulates into y, 2 adds the bias. */
export const matmulFlags = (a: { accumulate?: boolean; bias?: number }): number => (a.accumulate ? 1 : 0) | (a.bias !== undefined ? 2 : 0);

const kernelModule = variantModules(CPU_KERNELS_WASM_BASE64, CPU_KERNELS_RELAXED_WASM_BASE64);

export interface CpuKernelsOptions {
  /** Default: `relaxed` where the engine has it, else `simd`. */
  variant?: CpuKernelVariant;
}

const PAGE = 65536;
/** wasm32's 4 GiB, in pages. */
const MAX_PAGES = 65536;

export class CpuKernels {
  private top = 16; // offset 0 stays unused, so no buffer starts at a null address
  private constructor(
    readonly memory: WebAssembly.Memory,
    private readonly k: KernelExports,
    readonly variant: CpuKernelVariant,
  ) {}

  /** Kernels on a fresh memory of `initialBytes` (rounded up to pages), grown by `alloc`. */
  static create(initialBytes = PAGE, o: CpuKernelsOptions = {}): CpuKernels {
    const variant = o.variant ?? (relaxedSimdAvailable() ? 'relaxed' : 'simd');
    const pages = Math.max(1, Math.ceil(initialBytes / PAGE));
    if (pages > MAX_PAGES) throw new CpuMemoryError(initialBytes, 'more than one WebAssembly memory holds (4 GiB)');
    let memory: WebAssembly.Memory;
    try {
      memory = new WebAssembly.Memory({ initial: pages, maximum: MAX_PAGES });
    } catch (e) {
      throw new CpuMemoryError(pages * PAGE, `the engine could not allocate it (${(e as Error).message})`);
    }
    const inst = new WebAssembly.Instance(kernelModule(variant), { env: { memory } });
    return new CpuKernels(memory, inst.exports as unknown as KernelExports, variant);
  }

  /** A fresh 16-byte-aligned region of `bytes`, growing the memory to fit (CpuMemoryError if it cannot). */
  alloc(bytes: number): number {
    const at = this.top;
    const end = at + Math.ceil(bytes / 16) * 16;
    const have = this.memory.buffer.byteLength;
    if (end > have) {
      const pages = Math.ceil((end - have) / PAGE);
      if (have / PAGE + pages > MAX_PAGES) throw new CpuMemoryError(end, 'more than one WebAssembly memory holds (4 GiB)');
      try {
        this.memory.grow(pages);
      } catch (e) {
        throw new CpuMemoryError(end, `the memory could not grow to it (${(e as Error).message})`);
      }
    }
    this.top = end;
    return at;
  }

  /** Copies `v`'s bytes into a fresh region (`alloc`) and returns its offset. */
  put(v: ArrayBufferView): number {
    const at = this.alloc(v.byteLength);
    new Uint8Array(this.memory.buffer, at, v.byteLength).set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
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

  /** y = x·wᵀ (+ bias), or y += it; every weight is read from memory once for the whole batch. */
  matmul(a: MatmulArgs): void {
    if (a.layout !== undefined && a.layout !== 'rows') {
      throw new InvalidArgumentError(`the kernels' matmul takes rows weights, got ${a.layout}`, 'Multiply panel weights with CpuPanel (src/cpu/panel.ts) or the CPU GEMM');
    }
    this.k.matmul(a.y, a.x, a.xStride ?? a.k, a.w, a.m, a.k, a.n, matmulFlags(a), a.bias ?? 0, a.dtype === 'f16' ? 1 : 0);
  }

  /** The kernels' exp: Math.exp's algorithm (V8's FDLIBM port) in the module, to the bit. */
  exp(x: number): number {
    return this.k.exp(x);
  }

  /** y[i] = `exp(x[i])` rounded to f32, i < n, by the four-lane exp that siluMul and attention use (the last n mod 4 one by one). */
  expf(y: number, x: number, n: number): void {
    this.k.expf(y, x, n);
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

  /** Copies nKv heads at the start of each row into the cache (slot, nKv, maxSeq, headSize) of dtype at the row's slot and position. */
  kvWrite(
    src: number, rowStride: number, nKv: number, headSize: number, positions: number, slots: number, m: number, cache: number, maxSeq: number,
    dtype: CpuKvDtype = 'f32',
  ): void {
    this.k.kvWrite(src, rowStride, nKv, headSize, positions, slots, m, cache, maxSeq, dtype === 'f16' ? 1 : 0);
  }

  /** Causal attention of each row over positions 0..positions[r] of its slot, with an online softmax (one pass over k and v). */
  attention(a: AttentionArgs): void {
    this.k.attention(
      a.out, a.q, a.qStride, a.k, a.v, a.maxSeq, a.nKv, a.positions, a.slots, a.m, a.nHeads, a.headSize, a.kvMul, a.headOffset, a.kvDtype === 'f16' ? 1 : 0,
    );
  }
}
