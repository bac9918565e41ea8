/** Row-wise elementwise ops and argmax. */
import commonSrc from '../../../shaders/common.wgsl?raw';
import ewSrc from '../../../shaders/elementwise.wgsl?raw';
import argmaxSrc from '../../../shaders/argmax.wgsl?raw';
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

function ew(ctx: GpuContext, step: StepParams, entry: 'silu_mul' | 'add', n: number, a: Operand, b: Operand, y: Operand, maxM: number): BoundOp {
  if (y.buffer === a.buffer || y.buffer === b.buffer) {
    if (entry === 'silu_mul' || y.buffer === a.buffer) throw new InvalidArgumentError(`${entry}: the output must not alias an input buffer`);
  }
  const pipeline = ctx.pipelines.get(wgsl(commonSrc, ewSrc), entry, {}, entry);
  const p = createParamBlock(ctx, [n, a.stride ?? n, a.offset ?? 0, b.stride ?? n, b.offset ?? 0, y.stride ?? n, y.offset ?? 0, 0], [], entry);
  const bg = bindGroup(ctx, pipeline, [step.buffer, p, a.buffer, entry === 'add' ? undefined : b.buffer, y.buffer], entry);
  return makeOp(ctx, entry, maxM, [p], (pass, m) => {
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bg);
    dispatchLinear(pass, Math.ceil((m * n) / WG));
  });
}

/** y[r][i] = silu(a[r][i]) · b[r][i] for i < n (a and b may be two ranges of one buffer). */
export function createSiluMul(ctx: GpuContext, step: StepParams, o: { a: Operand; b: Operand; y: Operand; n: number; maxM: number }): BoundOp {
  return ew(ctx, step, 'silu_mul', o.n, o.a, o.b, o.y, o.maxM);
}

/** y[r][i] += x[r][i] for i < n (the residual). */
export function createAdd(ctx: GpuContext, step: StepParams, o: { x: Operand; y: Operand; n: number; maxM: number }): BoundOp {
  return ew(ctx, step, 'add', o.n, o.x, o.x, o.y, o.maxM);
}

export interface ArgmaxOptions {
  /** x (maxM, xStride) f32, n values per row from xOffset. */
  x: GPUBuffer;
  n: number;
  xStride?: number;
  xOffset?: number;
  /** out (maxM, 2) u32: [index, bitcast<u32>(value)] per row. */
  out: GPUBuffer;
  maxM: number;
}

/** Per row: the index of the largest value (ties → lowest index) and the value. */
export function createArgmax(ctx: GpuContext, step: StepParams, o: ArgmaxOptions): BoundOp {
  const pipeline = ctx.pipelines.get(wgsl(commonSrc, argmaxSrc), 'argmax', {}, 'argmax');
  const p = createParamBlock(ctx, [o.n, o.xStride ?? o.n, o.xOffset ?? 0, 0], [], 'argmax');
  const bg = bindGroup(ctx, pipeline, [step.buffer, p, o.x, o.out], 'argmax');
  return makeOp(ctx, 'argmax', o.maxM, [p], (pass, m) => {
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bg);
    dispatchLinear(pass, m);
  });
}
