/**
 * The CPU rank's cache-blocked GEMM (gemm.wat) for prefill and batches of many rows, on the same
 * memory as its `CpuKernels`: each block of four weight rows is made f32 once and reused from
 * cache across every input row. Below GEMM_MIN_ROWS rows the kernels' matmul, which streams the
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
    /** panelScratchBytes(maxK) bytes (at least 32·maxK + 32), free between calls (the kernels' matmul widens f16 blocks into it, the panel matmul interleaves rows and widens halves there). */
    readonly scratch: number,
    readonly maxK: number,
  ) {}

  /** The GEMM on `kernels`' memory (in its variant), with a scratch panel for k up to maxK allocated there. */
  static create(kernels: CpuKernels, maxK: number): CpuGemm {
    const scratch = kernels.alloc(Math.max(32 * maxK + 32, panelScratchBytes(maxK)));
    const inst = new WebAssembly.Instance(gemmModule(kernels.variant), { env: { memory: kernels.memory } });
    return new CpuGemm(inst.exports as unknown as GemmExports, scratch, maxK);
  }

  /**
   * y = x·wᵀ (+ bias), or y += it, for a `tiled` w (the same sums as `CpuKernels.matmul` up to
   * rounding order) or a `panel` one, f32 or f16 (the same bits as `CpuPanel.matmul`).
   */
  gemm(a: MatmulArgs): void {
    const panel = a.layout === 'panel';
    if (a.layout !== 'tiled' && !panel) {
      throw new InvalidArgumentError(`the CPU GEMM takes tiled or panel weights, got ${a.dtype} ${a.layout ?? 'rows'}`, 'Lay the matrix out with CpuKernels.tile or writePanels');
    }
    if (a.k > this.maxK) throw new InvalidArgumentError(`the CPU GEMM was made for k ≤ ${this.maxK}, got ${a.k}`, 'Create it with the largest k it will multiply');
    const flags = matmulFlags(a) | (panel ? 4 : 0);
    this.g.gemm(a.y, a.x, a.xStride ?? a.k, a.w, a.m, a.k, a.n, flags, a.bias ?? 0, a.dtype === 'f16' ? 1 : 0, this.scratch);
  }
}

/**
 * The matmul a rank binds its ops to: the GEMM for GEMM_MIN_ROWS rows or more on tiled or panel
 * weights; below that, the panel matmul on panel weights and the kernels' matmul on the others
 * (each with the GEMM's scratch: the calls never overlap). The scratch is allocated on the
 * kernels' memory now.
 */
export function matmulFor(kernels: CpuKernels, maxK: number): (a: MatmulArgs) => void {
  const g = CpuGemm.create(kernels, maxK);
  const p = CpuPanel.create(kernels, maxK, g.scratch);
  return (a) => {
    if (a.m >= GEMM_MIN_ROWS && a.layout !== 'rows' && a.layout !== undefined) g.gemm(a);
    else if (a.layout === 'panel') p.matmul(a);
    else kernels.matmul({ ...a, scratch: g.scratch });
  };
}
