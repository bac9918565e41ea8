/** A matrix of a CPU rank in the `panel` layout (src/cpu/panel.ts), f32 or f16, for cpu-backend.ts. */
import type { CpuKernels } from '../src/cpu/kernels.js';
import { panelBytes, writePanels } from '../src/cpu/panel.js';
import type { CpuMatrix } from './cpu-quant.js';

/** The parts' rows (cols weights each, one after another; all f32 or all halves) in panels in the memory. */
export function panelMatrix(kernels: CpuKernels, parts: readonly (Float32Array | Uint16Array)[], rows: number, cols: number): CpuMatrix {
  const dtype = parts[0] instanceof Uint16Array ? 'f16' : 'f32';
  const at = kernels.alloc(panelBytes(rows, cols, dtype));
  writePanels(kernels, at, parts, cols);
  return { at, dtype, layout: 'panel' };
}
