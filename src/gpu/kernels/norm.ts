/** RMSNorm as its own op: y[r] = g · x[r] / sqrt(mean(x[r]²) + eps). (Usually fused into the next matmul instead; see MatmulInput.) */
import commonSrc from '../../../shaders/common.wgsl?raw';
import normSrc from '../../../shaders/rmsnorm.wgsl?raw';
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from '../core/device.js';
import { createParamBlock, type StepParams } from '../core/buffers.js';
import { wgsl } from '../core/layout.js';
import { bindGroup, dispatchLinear, makeOp, type BoundOp } from '../core/op.js';

export interface RmsnormOptions {
  /** x (maxM, xStride) f32. */
  x: GPUBuffer;
  /** g (dim) f32. */
  weight: GPUBuffer;
  /** y (maxM, yStride) f32; must not be x. */
  y: GPUBuffer;
  dim: number;
  eps: number;
  xStride?: number;
  yStride?: number;
  maxM: number;
}

export function createRmsnorm(ctx: GpuContext, step: StepParams, o: RmsnormOptions): BoundOp {
  if (o.x === o.y) throw new InvalidArgumentError('rmsnorm: y must be a different buffer from x');
  const pipeline = ctx.pipelines.get(wgsl(commonSrc, normSrc), 'rmsnorm', {}, 'rmsnorm');
  const p = createParamBlock(ctx, [o.dim, o.xStride ?? o.dim, o.yStride ?? o.dim, o.eps], [3], 'rmsnorm');
  const bg = bindGroup(ctx, pipeline, [step.buffer, p, o.x, o.weight, o.y], 'rmsnorm');
  return makeOp(ctx, 'rmsnorm', o.maxM, [p], (pass, m) => {
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bg);
    dispatchLinear(pass, m);
  });
}
