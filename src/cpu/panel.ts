/**
 * The CPU rank's matmul for batches of 1 to 8 rows on f32 or f16 `panel` weights (panel.wat), on
 * the same memory as its `CpuKernels`: blocks of 16 weight rows laid out k-major, so each input
 * value is a splat against four outputs a load and every weight is read once for the whole batch.
 * Each output's sum runs over k in order (halves widened exactly), so a row's sums are the same
 * bits at every batch size (and in the GEMM, which packs its panels from this layout for more rows).
 */
import { CPU_PANEL_RELAXED_WASM_BASE64, CPU_PANEL_WASM_BASE64 } from './panel-wasm.js';
import { variantModules } from './wasm-variants.js';
import { matmulFlags, type CpuKernels, type CpuWeightDtype, type MatmulArgs } from './kernels.js';
import { InvalidArgumentError } from '../errors.js';
import { releaseBuffer } from '../loader/release-buffer.js';

interface PanelExports {
  matmul(y: number, x: number, xStride: number, w: number, m: number, k: number, n: number, flags: number, bias: number, dtype: number, scratch: number): void;
}

/** Weight rows a panel block holds; the last block of a matrix is 4, 8 or 12 wide when n is not a multiple of 16. */
export const PANEL_ROWS = 16;

/** Most input rows `CpuPanel.matmul` takes at once. */
export const PANEL_MAX_M = 8;

/** Bytes of an (n, k) matrix of dtype in panels: its rows padded to a multiple of four. */
export function panelBytes(n: number, k: number, dtype: CpuWeightDtype = 'f32'): number {
  return Math.ceil(n / 4) * 4 * k * (dtype === 'f16' ? 2 : 4);
}

/**
 * Writes matrix rows (k weights each; the parts' rows one after another, all f32 or all f16
 * halves) at dst in the `panel` layout, panelBytes long: per block of 16 rows (or the last 4, 8
 * or 12), weight j of every row of the block, then weight j + 1, …; padding rows are zero.
 */
export function writePanels(kernels: CpuKernels, dst: number, parts: readonly (Float32Array | Uint16Array)[], k: number): void {
  const f16 = parts[0] instanceof Uint16Array;
  // The bits, so every value (NaN payloads too) lands as it was.
  const bits = parts.map((p) => (p instanceof Uint16Array ? p : new Uint32Array(p.buffer, p.byteOffset, p.length)));
  const rows = bits.flatMap((p) => Array.from({ length: p.length / k }, (_, r) => ({ p, at: r * k })));
  const n = rows.length;
  // Laid out in JS, then copied in once: one bulk write into the memory, as every other load is.
  const out = f16 ? new Uint16Array(panelBytes(n, k, 'f16') / 2) : new Uint32Array(panelBytes(n, k) / 4);
  let o = 0;
  for (let i = 0; i < n; i += PANEL_ROWS) {
    const width = Math.min(PANEL_ROWS, Math.ceil((n - i) / 4) * 4);
    for (let c = 0; c < width && i + c < n; c++) {
      const { p, at } = rows[i + c]!;
      for (let j = 0; j < k; j++) out[o + j * width + c] = p[at + j]!;
    }
    o += width * k;
  }
  (f16 ? new Uint16Array(kernels.memory.buffer, dst, out.length) : new Uint32Array(kernels.memory.buffer, dst, out.length)).set(out);
  // As large as the matrix, and an idle rank may never collect it.
  releaseBuffer(out.buffer);
}

const panelModule = variantModules(CPU_PANEL_WASM_BASE64, CPU_PANEL_RELAXED_WASM_BASE64);

/** Bytes of the scratch a panel matmul for k up to maxK needs: the batch's values interleaved, one block's sums, one widened chunk. */
export function panelScratchBytes(maxK: number): number {
  return 32 * maxK + 512 + 4096;
}

export class CpuPanel {
  private constructor(
    private readonly p: PanelExports,
    /** panelScratchBytes(maxK) bytes, free between calls. */
    private readonly scratch: number,
    readonly maxK: number,
  ) {}

  /**
   * The panel matmul on `kernels`' memory (in its variant), for k up to maxK, with `scratch`
   * (panelScratchBytes(maxK) bytes, which other kernels may use between its calls) or one of its own.
   */
  static create(kernels: CpuKernels, maxK: number, scratch = kernels.alloc(panelScratchBytes(maxK))): CpuPanel {
    const inst = new WebAssembly.Instance(panelModule(kernels.variant), { env: { memory: kernels.memory } });
    return new CpuPanel(inst.exports as unknown as PanelExports, scratch, maxK);
  }

  /** y = x·wᵀ (+ bias), or y += it, for f32 or f16 `panel` weights and at most PANEL_MAX_M rows. */
  matmul(a: MatmulArgs): void {
    if (a.layout !== 'panel') throw new InvalidArgumentError(`the panel matmul takes panel weights, got ${a.layout ?? 'rows'}`, 'Lay the matrix out with writePanels');
    if (a.m > PANEL_MAX_M) throw new InvalidArgumentError(`the panel matmul takes at most ${PANEL_MAX_M} rows, got ${a.m}`, 'Multiply more rows with the CPU GEMM');
    if (a.k > this.maxK) throw new InvalidArgumentError(`the panel matmul was made for k ≤ ${this.maxK}, got ${a.k}`, 'Create it with the largest k it will multiply');
    const flags = matmulFlags(a);
    this.p.matmul(a.y, a.x, a.xStride ?? a.k, a.w, a.m, a.k, a.n, flags, a.bias ?? 0, a.dtype === 'f16' ? 1 : 0, this.scratch);
  }
}
