/**
 * The CPU rank's cache-blocked GEMM (gemm.wat) for prefill and batches of many rows, on the same
 * memory as its `CpuKernels`: each panel of eight weight rows is made f32 once and reused from
 * cache across every input row. Below GEMM_MIN_ROWS rows the panel matmul, which streams the
 * weights once for the whole batch, stays the faster one.
 */
import { CPU_GEMM_RELAXED_WASM_BASE64, CPU_GEMM_WASM_BASE64 } from './gemm-wasm.js';
import { variantModules } from './wasm-variants.js';
import { matmulFlags, type CpuKernels, type MatmulArgs } from './kernels.js';
import { InvalidArgumentError } from '../errors.js';
import { CpuPanel, panelScratchBytes } from './panel.js';

interface GemmExports {
  gemm(y: number, x: number, xStride: number, w: number, m: number, k: number, n: number, flags: number, bias: number, dtype: number, scratch: number): void;
}

/** Rows from which `matmulFor`'s matmul takes the GEMM. */
export const GEMM_MIN_ROWS = 9;

const gemmModule = variantModules(CPU_GEMM_WASM_BASE64, CPU_GEMM_RELAXED_WASM_BASE64);

export class CpuGemm {
  private constructor(
    private readonly g: GemmExports,
    /** panelScratchBytes(maxK) bytes (at least 32·maxK + 32), free between calls (the panel matmul interleaves rows and widens halves there too). */
    readonly scratch: number,
    readonly maxK: number,
  ) {}

  /** The GEMM on `kernels`' memory (in its variant), with a scratch panel for k up to maxK allocated there. */
  static create(kernels: CpuKernels, maxK: number): CpuGemm {
    const scratch = kernels.alloc(Math.max(32 * maxK + 32, panelScratchBytes(maxK)));
    const inst = new WebAssembly.Instance(gemmModule(kernels.variant), { env: { memory: kernels.memory } });
    return new CpuGemm(inst.exports as unknown as GemmExports, scratch, maxK);
  }

  /** y = x·wᵀ (+ bias), or y += it, for an f32 or f16 `panel` w: the same bits as `CpuPanel.matmul`. */
  gemm(a: MatmulArgs): void {
    if (a.layout !== 'panel') {
      throw new InvalidArgumentError(`the CPU GEMM takes panel weights, got ${a.dtype} ${a.layout ?? 'rows'}`, 'Lay the matrix out with writePanels');
    }
    if (a.k > this.maxK) throw new InvalidArgumentError(`the CPU GEMM was made for k ≤ ${this.maxK}, got ${a.k}`, 'Create it with the largest k it will multiply');
    this.g.gemm(a.y, a.x, a.xStride ?? a.k, a.w, a.m, a.k, a.n, matmulFlags(a), a.bias ?? 0, a.dtype === 'f16' ? 1 : 0, this.scratch);
  }
}

/**
 * The matmul a rank binds its ops to: on panel weights the GEMM for GEMM_MIN_ROWS rows or more
 * and the panel matmul below (sharing the GEMM's scratch: the calls never overlap); on rows
 * weights the kernels' matmul. The scratch is allocated on the kernels' memory now.
 */
export function matmulFor(kernels: CpuKernels, maxK: number): (a: MatmulArgs) => void {
  const g = CpuGemm.create(kernels, maxK);
  const p = CpuPanel.create(kernels, maxK, g.scratch);
  return (a) => {
    if (a.layout !== 'panel') kernels.matmul(a);
    else if (a.m >= GEMM_MIN_ROWS) g.gemm(a);
    else p.matmul(a);
  };
}
