/**
 * The KV cache of one rank: for each layer a K and a V buffer laid out [slot][kvHead][pos][hs]
 * (f32 or f16 values, see kv-format.ts), so one (slot, kv head) is a contiguous (maxSeq, hs)
 * matrix that attention streams.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from '../core/device.js';
import { kvBytesPerValue, kvCacheAccess, type KvCacheAccess, type KvCacheDtype } from './kv-format.js';

export interface KvCacheShape {
  nLayers: number;
  /** KV heads held by this rank. */
  nKvHeadsLocal: number;
  headSize: number;
  /** Positions per sequence slot. */
  maxSeq: number;
  /** Sequences held at once (continuous batching); 1 for a single stream. */
  nSlots: number;
  /** Stored values (default f32); f16 needs an even head size (two halves per u32). */
  dtype?: KvCacheDtype;
}

export interface KvCache extends KvCacheShape {
  dtype: KvCacheDtype;
  /** k[layer]: (nSlots, nKvHeadsLocal, maxSeq, headSize) values of `dtype`. */
  k: GPUBuffer[];
  v: GPUBuffer[];
}

/** Value index of (slot, kvHead, pos, 0) in a layer's buffer. */
export function kvIndex(c: KvCacheShape, slot: number, head: number, pos: number): number {
  return ((slot * c.nKvHeadsLocal + head) * c.maxSeq + pos) * c.headSize;
}

/** Bytes of one layer's K (or V) buffer. */
export function kvLayerBytes(shape: KvCacheShape): number {
  return shape.nSlots * shape.nKvHeadsLocal * shape.maxSeq * shape.headSize * kvBytesPerValue(shape.dtype ?? 'f32');
}

/** How this device's kernels reach `cache`: native f16 needs `shader-f16` on the device. */
export function cacheAccess(ctx: GpuContext, cache: KvCache): KvCacheAccess {
  return kvCacheAccess(cache.dtype, ctx.device.features.has('shader-f16'));
}

export function createKvCache(ctx: GpuContext, shape: KvCacheShape): KvCache {
  const dtype = shape.dtype ?? 'f32';
  if (dtype === 'f16' && shape.headSize % 2 !== 0) throw new InvalidArgumentError(`an f16 KV cache needs an even head size, got ${shape.headSize}`, "Use kvCache: 'f32'");
  const bytes = kvLayerBytes(shape);
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
  return { ...shape, dtype, k: make('k'), v: make('v') };
}

export function destroyKvCache(cache: KvCache): void {
  for (const b of [...cache.k, ...cache.v]) b.destroy();
  cache.k = [];
  cache.v = [];
}
