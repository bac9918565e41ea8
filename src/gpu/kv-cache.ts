/**
 * The KV cache of one rank: for each layer a K and a V buffer laid out [slot][kvHead][pos][hs]
 * (f32), so one (slot, kv head) is a contiguous (maxSeq, hs) matrix that attention streams.
 */
import commonSrc from '../../shaders/common.wgsl?raw';
import kvSrc from '../../shaders/kv_write.wgsl?raw';
import { InvalidArgumentError } from '../errors.js';
import type { GpuContext } from './device.js';
import { createParamBlock, type StepParams } from './buffers.js';
import { wgsl } from './layout.js';
import { bindGroup, dispatchLinear, makeOp, type BoundOp } from './op.js';

export interface KvCacheShape {
  nLayers: number;
  /** KV heads held by this rank. */
  nKvHeadsLocal: number;
  headSize: number;
  /** Positions per sequence slot. */
  maxSeq: number;
  /** Sequences held at once (continuous batching); 1 for a single stream. */
  nSlots: number;
}

export interface KvCache extends KvCacheShape {
  /** k[layer]: (nSlots, nKvHeadsLocal, maxSeq, headSize) f32. */
  k: GPUBuffer[];
  v: GPUBuffer[];
}

/** Float index of (slot, kvHead, pos, 0) in a layer's buffer. */
export function kvIndex(c: KvCacheShape, slot: number, head: number, pos: number): number {
  return ((slot * c.nKvHeadsLocal + head) * c.maxSeq + pos) * c.headSize;
}

export function createKvCache(ctx: GpuContext, shape: KvCacheShape): KvCache {
  const bytes = shape.nSlots * shape.nKvHeadsLocal * shape.maxSeq * shape.headSize * 4;
  const limit = Math.min(ctx.limits.maxStorageBufferBindingSize, ctx.limits.maxBufferSize);
  if (bytes > limit) {
    throw new InvalidArgumentError(
      `KV cache of one layer needs ${bytes} bytes, over the binding limit of ${limit}`,
      'Lower maxSeq or nSlots, or use more ranks',
    );
  }
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
  const make = (kind: string) =>
    Array.from({ length: shape.nLayers }, (_, l) => ctx.device.createBuffer({ size: Math.max(16, bytes), usage, label: `${kind}cache[${l}]` }));
  return { ...shape, k: make('k'), v: make('v') };
}

export function destroyKvCache(cache: KvCache): void {
  for (const b of [...cache.k, ...cache.v]) b.destroy();
  cache.k = [];
  cache.v = [];
}

export interface KvWriteOptions {
  cache: KvCache;
  layer: number;
  /** k rows: row r's kv heads at kOffset + r·kStride (floats). */
  k: GPUBuffer;
  kStride: number;
  kOffset?: number;
  v: GPUBuffer;
  vStride: number;
  vOffset?: number;
  maxM: number;
}

/** Writes row r's k and v into the layer's cache at (slots[r], positions[r]). */
export function createKvWrite(ctx: GpuContext, step: StepParams, o: KvWriteOptions): BoundOp {
  const c = o.cache;
  const pipeline = ctx.pipelines.get(wgsl(commonSrc, kvSrc), 'kv_write', {}, 'kv_write');
  const p = createParamBlock(ctx, [c.nKvHeadsLocal, c.headSize, c.maxSeq, o.kStride, o.kOffset ?? 0, o.vStride, o.vOffset ?? 0, 0], [], 'kv_write');
  const bg = bindGroup(ctx, pipeline, [step.buffer, p, o.k, o.v, c.k[o.layer]!, c.v[o.layer]!], 'kv_write');
  const perRow = c.nKvHeadsLocal * c.headSize;
  return makeOp(ctx, 'kv_write', o.maxM, [p], (pass, m) => {
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bg);
    dispatchLinear(pass, Math.ceil((m * perRow) / 64));
  });
}
