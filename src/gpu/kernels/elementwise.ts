/** The residual add, row by row. */
import commonSrc from '../../../shaders/common.wgsl?raw';
import ewSrc from '../../../shaders/elementwise.wgsl?raw';
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from '../core/device.js';
import { createParamBlock, type StepParams } from '../core/buffers.js';
import { wgsl } from '../core/layout.js';
import { bindGroup, dispatchLinear, makeOp, type BoundOp } from '../core/op.js';

const WG = 64;

/** A row-major operand: row r, element i at offset + r·stride + i (floats). */
export interface Operand {
  buffer: GPUBuffer;
  /** Floats between rows; defaults to n. */
  stride?: number;
  offset?: number;
}

/** y[r][i] += x[r][i] for i < n (the residual). */
export function createAdd(ctx: GpuContext, step: StepParams, o: { x: Operand; y: Operand; n: number; maxM: number }): BoundOp {
  const { x, y, n } = o;
  if (y.buffer === x.buffer) throw new InvalidArgumentError('add: the output must not alias an input buffer');
  const pipeline = ctx.pipelines.get(wgsl(commonSrc, ewSrc), 'add', {}, 'add');
  const p = createParamBlock(ctx, [n, x.stride ?? n, x.offset ?? 0, x.stride ?? n, x.offset ?? 0, y.stride ?? n, y.offset ?? 0, 0], [], 'add');
  const bg = bindGroup(ctx, pipeline, [step.buffer, p, x.buffer, undefined, y.buffer], 'add');
  return makeOp(ctx, 'add', o.maxM, [p], (pass, m) => {
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bg);
    dispatchLinear(pass, Math.ceil((m * n) / WG));
  });
}
