/** An f32 matrix of a CPU rank in the `panel` layout (src/cpu/panel.ts), for cpu-backend.ts. */
import type { CpuKernels } from '../src/cpu/kernels.js';
import { panelBytes, writePanels } from '../src/cpu/panel.js';
import type { CpuMatrix } from './cpu-quant.js';

/** The parts' rows (cols weights each, one after another) in panels in the memory. */
export function panelMatrix(kernels: CpuKernels, parts: readonly Float32Array[], rows: number, cols: number): CpuMatrix {
  const at = kernels.alloc(panelBytes(rows, cols));
  writePanels(kernels, at, parts, cols);
  return { at, dtype: 'f32', layout: 'panel' };
}
