/**
 * A CPU rank's GGUF Q8_0 and Q4_0 kernels (quant.wat), on the memory of its `CpuKernels`:
 * matrices tiled once in JS, matmuls with f32 activations (weight-only) or with the input
 * quantised to int8 per group first (W8A8 / W4A8: the GPU's int8 mode), and the embedding's
 * rows dequantised. Groups are 32 values along a row with an f32 scale each.
 */
import { CPU_QUANT_RELAXED_WASM_BASE64, CPU_QUANT_WASM_BASE64 } from './quant-wasm.js';
import { variantModules } from './wasm-variants.js';
import { matmulFlags, type CpuKernels } from './kernels.js';
import { ModelFormatError } from '../errors.js';
import { int8ActivationBytes, QUANT_GROUP } from './quant-bytes.js';

export { QUANT_GROUP };

/** A quantised matrix's form: GGUF Q8_0 (int8 values) or Q4_0 (GGML's nibble bytes). */
export type CpuQuantDtype = 'q8_0' | 'q4_0';

/** One part of a matrix: its values plane (int8, or two nibbles a byte) and its scales, rows of k values. */
export interface QuantPart {
  q: Int8Array | Uint8Array;
  s: Float32Array;
}

interface QuantExports {
  matmulQ(y: number, x: number, xStride: number, w: number, m: number, k: number, n: number, flags: number, bias: number, dtype: number): void;
  quantizeA8(xa: number, x: number, xStride: number, m: number, k: number, planes: number): void;
  matmulQA8(y: number, xa: number, w: number, m: number, k: number, n: number, flags: number, bias: number, dtype: number): void;
  embedQ(y: number, q: number, s: number, tokens: number, m: number, dim: number, dtype: number): void;
}

export interface QuantMatmulArgs {
  y: number; // (m, n) f32
  w: number; // (n, k) tiled (`tile`)
  dtype: CpuQuantDtype;
  m: number;
  k: number;
  n: number;
  /** y += the product instead of y = it. */
  accumulate?: boolean;
  /** (n,) f32 added to the product (before it is accumulated). */
  bias?: number;
}

const quantModule = variantModules(CPU_QUANT_WASM_BASE64, CPU_QUANT_RELAXED_WASM_BASE64);

/** Bytes of one (block of four rows, group) in the tiled layout: four rows' values, then their four scales. */
const tileGroupBytes = (dtype: CpuQuantDtype): number => (dtype === 'q8_0' ? 4 * 32 : 4 * 16) + 16;
const code = (dtype: CpuQuantDtype): number => (dtype === 'q4_0' ? 1 : 0);

export class CpuQuantKernels {
  private constructor(private readonly kn: CpuKernels, private readonly k: QuantExports) {}

  /** The quantised kernels on `kn`'s memory, in its build (relaxed or plain SIMD). */
  static create(kn: CpuKernels): CpuQuantKernels {
    const inst = new WebAssembly.Instance(quantModule(kn.variant), { env: { memory: kn.memory } });
    return new CpuQuantKernels(kn, inst.exports as unknown as QuantExports);
  }

  /** Bytes of an (n, k) matrix tiled: its rows padded to a multiple of four. */
  static tiledBytes(n: number, k: number, dtype: CpuQuantDtype): number {
    return Math.ceil(n / 4) * (k / QUANT_GROUP) * tileGroupBytes(dtype);
  }

  /** Bytes of m input rows of k values quantised (`quantize`): `int8ActivationBytes`. */
  static activationBytes(m: number, k: number): number {
    return int8ActivationBytes(m, k);
  }

  /**
   * Writes matrix rows (k values each; the parts' rows one after another, all of dtype) at dst in
   * the tiled layout, tiledBytes long: per block of four rows and per group, the rows' values
   * (32 int8, or 16 nibble bytes), then their four f32 scales; padding rows are zero.
   */
  tile(dst: number, parts: readonly QuantPart[], k: number, dtype: CpuQuantDtype): void {
    if (k % QUANT_GROUP !== 0) throw new ModelFormatError(`a ${dtype} matrix on a CPU rank needs rows of whole groups of ${QUANT_GROUP}, got ${k} values`);
    const vb = dtype === 'q8_0' ? 32 : 16; // value bytes per group row
    const g = k / QUANT_GROUP;
    const rows = parts.flatMap((p) => Array.from({ length: p.s.length / g }, (_, r) => ({ p, r })));
    const n = rows.length;
    const total = CpuQuantKernels.tiledBytes(n, k, dtype);
    const out = new Uint8Array(total);
    const scales = new Float32Array(out.buffer);
    const gb = tileGroupBytes(dtype);
    for (let i = 0; i < n; i += 4) {
      for (let c = 0; c < 4 && i + c < n; c++) {
        const { p, r } = rows[i + c]!;
        const q = new Uint8Array(p.q.buffer, p.q.byteOffset, p.q.byteLength);
        for (let j = 0; j < g; j++) {
          const o = ((i / 4) * g + j) * gb;
          const from = (r * g + j) * vb;
          for (let e = 0; e < vb; e++) out[o + c * vb + e] = q[from + e]!;
          scales[(o + 4 * vb) / 4 + c] = p.s[r * g + j]!;
        }
      }
    }
    new Uint8Array(this.kn.memory.buffer, dst, total).set(out);
  }

  /** y = x·wᵀ (+ bias), or y += it, x (m, k) f32 rows xStride floats apart (default k). */
  matmul(a: QuantMatmulArgs & { x: number; xStride?: number }): void {
    this.k.matmulQ(a.y, a.x, a.xStride ?? a.k, a.w, a.m, a.k, a.n, matmulFlags(a), a.bias ?? 0, code(a.dtype));
  }

  /**
   * m rows of x (k floats, xStride apart) into xa (activationBytes(m, k)), quantised per group as
   * runq.c does; `matmulA8` takes the same m. Without `planes` the sign planes are not written:
   * only this class's Q8_0 `matmulA8` reads them (the GEMM, Q4_0 and the K-quants do not).
   */
  quantize(xa: number, x: number, m: number, k: number, xStride = k, planes = true): void {
    this.k.quantizeA8(xa, x, xStride, m, k, planes ? 1 : 0);
  }

  /** y = xa·wᵀ (+ bias), or y += it, xa `quantize`'s m rows of k values: Σ over groups of ((f32)(Σ xq·wq) · ws) · xs. */
  matmulA8(a: QuantMatmulArgs & { xa: number }): void {
    this.k.matmulQA8(a.y, a.xa, a.w, a.m, a.k, a.n, matmulFlags(a), a.bias ?? 0, code(a.dtype));
  }

  /** y[r] = row tokens[r] of a (vocab, dim) table (values plane at q, scales at s), dequantised. */
  embed(y: number, q: number, s: number, tokens: number, m: number, dim: number, dtype: CpuQuantDtype): void {
    this.k.embedQ(y, q, s, tokens, m, dim, code(dtype));
  }
}
