/**
 * The CPU rank's GEMM over GGUF Q8_0 / Q4_0 weights (qgemm.wat) for prefill and batches of many
 * rows, on the memory of its `CpuKernels` and on `CpuQuantKernels.tile`'s layout: eight weight
 * rows are unpacked once into a panel that stays in cache against every input row. With int8
 * activations its sums are the small-m kernel's (`matmulA8`) bit for bit; weight-only, the same
 * sums up to rounding order.
 */
import { CPU_QGEMM_RELAXED_WASM_BASE64, CPU_QGEMM_WASM_BASE64 } from './qgemm-wasm.js';
import { variantModules } from './wasm-variants.js';
import { matmulFlags, type CpuKernels } from './kernels.js';
import { QUANT_GROUP, type CpuQuantDtype, type QuantMatmulArgs } from './quant.js';
import { InvalidArgumentError } from '../errors.js';

interface QGemmExports {
  gemmQ(y: number, x: number, xStride: number, w: number, m: number, k: number, n: number, flags: number, bias: number, dtype: number, mode: number, scratch: number): void;
}

/** Rows from which `cpuMatmul` takes the quantised GEMM instead of the small-m kernels. */
export const QGEMM_MIN_ROWS = 9;

/**
 * Rows from which the GEMM is the faster, by measurement: int8 through i16 pairs (Q8_0, or Q4_0
 * without relaxed SIMD) loses at 9 rows (a third of its last four-row tile idle) and wins by 12.
 */
export function qgemmMinRows(g: CpuQuantGemm, dtype: CpuQuantDtype, activations: 'f32' | 'int8'): number {
  return activations === 'int8' && g.mode(dtype, true) === 1 ? 12 : QGEMM_MIN_ROWS;
}

const qgemmModule = variantModules(CPU_QGEMM_WASM_BASE64, CPU_QGEMM_RELAXED_WASM_BASE64);

export class CpuQuantGemm {
  private constructor(
    private readonly g: QGemmExports,
    private readonly scratch: number,
    private readonly relaxed: boolean,
    readonly maxM: number,
    readonly maxK: number,
  ) {}

  /** Scratch bytes for m rows of k values: the tile's sums, one unpacked group, the panel, the rows in blocks of four (mode 1's: 272 bytes a group). */
  static scratchBytes(maxM: number, maxK: number): number {
    return 384 + 33 * maxK + Math.ceil((17 * maxK * (maxM + 3)) / 8);
  }

  /** The GEMM on `kernels`' memory (in its variant), with scratch for up to maxM rows of maxK values allocated there. */
  static create(kernels: CpuKernels, maxM: number, maxK: number): CpuQuantGemm {
    const scratch = kernels.alloc(CpuQuantGemm.scratchBytes(maxM, maxK));
    const inst = new WebAssembly.Instance(qgemmModule(kernels.variant), { env: { memory: kernels.memory } });
    return new CpuQuantGemm(inst.exports as unknown as QGemmExports, scratch, kernels.variant === 'relaxed', maxM, maxK);
  }

  /** y = x·wᵀ (+ bias), or y += it, x (m, k) f32 rows xStride floats apart (default k): `CpuQuantKernels.matmul`'s sums. */
  matmul(a: QuantMatmulArgs & { x: number; xStride?: number }): void {
    this.run(a, a.x, a.xStride ?? a.k, this.mode(a.dtype, false));
  }

  /** y = xa·wᵀ (+ bias), or y += it, xa `CpuQuantKernels.quantize`'s m rows: `matmulA8`'s sums, bit for bit. */
  matmulA8(a: QuantMatmulArgs & { xa: number }): void {
    this.run(a, a.xa, a.k, this.mode(a.dtype, true));
  }

  /** qgemm.wat's mode: 0 weight-only; int8 through i16 pairs (1), or Q4_0's nibbles by relaxed SIMD's i8 × i7 dot where the build has it (2). */
  mode(dtype: CpuQuantDtype, int8: boolean): 0 | 1 | 2 {
    if (!int8) return 0;
    return this.relaxed && dtype === 'q4_0' ? 2 : 1;
  }

  private run(a: QuantMatmulArgs, x: number, xStride: number, mode: number): void {
    if (a.k > this.maxK || a.m > this.maxM) {
      throw new InvalidArgumentError(`the quantised GEMM was made for m ≤ ${this.maxM}, k ≤ ${this.maxK}; got m ${a.m}, k ${a.k}`, 'Create it with the largest m and k it will multiply');
    }
    if (a.k % QUANT_GROUP !== 0) throw new InvalidArgumentError(`the quantised GEMM takes k a multiple of ${QUANT_GROUP}, got ${a.k}`, 'Quantise rows in whole groups');
    const flags = matmulFlags(a);
    this.g.gemmQ(a.y, x, xStride, a.w, a.m, a.k, a.n, flags, a.bias ?? 0, a.dtype === 'q4_0' ? 1 : 0, mode, this.scratch);
  }
}
