/**
 * The shape every kernel wrapper shares. A factory compiles (or reuses) its pipelines, writes its
 * static parameters and builds its bind groups once; `encode` then only sets a pipeline and a
 * bind group and dispatches, so a step of a whole model allocates nothing.
 */
import type { GpuContext } from './device.js';
import { grid2d } from './layout.js';
import { destroyParamBlock } from './buffers.js';

export interface BoundOp {
  /** What it computes, with the weight's label for matmuls (`matmul layers.3.wqkv`): profiles group by it. */
  readonly name: string;
  /** Records this op for `m` rows (1 ≤ m ≤ the maxM it was created with) into `pass`. */
  encode(pass: GPUComputePassEncoder, m: number): void;
  /** Returns the op's parameter blocks to the pool; the bound buffers stay the caller's. */
  destroy(): void;
}

/** A buffer binding: the whole buffer, or a byte range of it. */
export type Binding = GPUBuffer | { buffer: GPUBuffer; offset?: number; size?: number };

export function bindGroup(ctx: GpuContext, pipeline: GPUComputePipeline, entries: (Binding | undefined)[], label?: string): GPUBindGroup {
  const list: GPUBindGroupEntry[] = [];
  entries.forEach((b, i) => {
    if (!b) return;
    list.push({ binding: i, resource: b instanceof GPUBuffer ? { buffer: b } : b });
  });
  return ctx.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: list, label });
}

/** Dispatches `count` workgroups folded into a 2-D grid (see grid2d), times `z`. */
export function dispatchLinear(pass: GPUComputePassEncoder, count: number, z = 1): void {
  const [x, y] = grid2d(count);
  pass.dispatchWorkgroups(x, y, z);
}

export function checkM(name: string, m: number, maxM: number): void {
  if (!(m >= 1 && m <= maxM)) throw new RangeError(`${name}: m must be in 1..${maxM}, got ${m}`);
}

/** A BoundOp from dispatch records built at creation time. */
export function makeOp(
  ctx: GpuContext,
  name: string,
  maxM: number,
  params: GPUBuffer[],
  record: (pass: GPUComputePassEncoder, m: number) => void,
): BoundOp {
  return {
    name,
    encode(pass, m) {
      checkM(name, m, maxM);
      record(pass, m);
    },
    destroy() {
      for (const p of params) destroyParamBlock(ctx, p);
      params.length = 0;
    },
  };
}
