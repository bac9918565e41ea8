/**
 * Rotary embeddings from CPU-computed f32 tables (the oracle's `ropeTables`), never WGSL sin/cos,
 * fused with the KV-cache write: rotate q in place and write rotated k and plain v into the
 * cache, in one dispatch.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from '../core/device.js';
import { createParamBlock, createStorageBuffer, type StepParams } from '../core/buffers.js';
import { cacheAccess, type KvCache } from './kv-cache.js';
import { ropeKvWgsl } from './kv-shaders.js';
import { bindGroup, dispatchLinear, makeOp, type BoundOp } from '../core/op.js';

export type RopeStyle = 'interleaved' | 'rotate_half';

/** (maxSeq, headSize/2) pairs (cos, sin) as vec2<f32>. */
export interface RopeTables {
  buffer: GPUBuffer;
  headSize: number;
  maxSeq: number;
}

/** Uploads tables shaped (seqLen, headSize/2), as `ropeTables` of src/model/reference.ts returns. */
export function createRopeTables(ctx: GpuContext, headSize: number, tables: { cos: Float32Array; sin: Float32Array }): RopeTables {
  const half = headSize / 2;
  if (!Number.isInteger(half) || tables.cos.length % half !== 0 || tables.sin.length !== tables.cos.length) {
    throw new InvalidArgumentError(`rope tables: expected (seqLen, ${half}) cos and sin, got ${tables.cos.length} and ${tables.sin.length}`);
  }
  const pairs = new Float32Array(tables.cos.length * 2);
  for (let i = 0; i < tables.cos.length; i++) {
    pairs[2 * i] = tables.cos[i]!;
    pairs[2 * i + 1] = tables.sin[i]!;
  }
  return { buffer: createStorageBuffer(ctx, pairs, 'rope tables'), headSize, maxSeq: tables.cos.length / half };
}

export function destroyRopeTables(t: RopeTables): void {
  t.buffer.destroy();
}

const styleId = (s: RopeStyle) => (s === 'interleaved' ? 0 : 1);

export interface RopeKvOptions {
  /** Rows of [q (nHeads·hs) | k (nKv·hs) | v (nKv·hs)] at the given offsets; q is rotated in place. */
  qkv: GPUBuffer;
  rowStride: number;
  qOffset?: number;
  /** Defaults: k right after q, v right after k. */
  kOffset?: number;
  vOffset?: number;
  nHeads: number;
  cache: KvCache;
  layer: number;
  tables: RopeTables;
  style: RopeStyle;
  maxM: number;
}

export function createRopeKv(ctx: GpuContext, step: StepParams, o: RopeKvOptions): BoundOp {
  const c = o.cache;
  const hs = c.headSize;
  if (o.tables.headSize !== hs) throw new InvalidArgumentError(`rope tables are for head size ${o.tables.headSize}, the cache has ${hs}`);
  const qOff = o.qOffset ?? 0;
  const kOff = o.kOffset ?? qOff + o.nHeads * hs;
  const vOff = o.vOffset ?? kOff + c.nKvHeadsLocal * hs;
  const pipeline = ctx.pipelines.get(ropeKvWgsl(cacheAccess(ctx, c)), 'rope_kv', { STYLE: styleId(o.style) }, 'rope_kv');
  const p = createParamBlock(ctx, [o.nHeads, c.nKvHeadsLocal, hs, o.rowStride, qOff, kOff, vOff, c.maxSeq], [], 'rope_kv');
  const bg = bindGroup(ctx, pipeline, [step.buffer, p, o.qkv, o.tables.buffer, c.k[o.layer]!, c.v[o.layer]!], 'rope_kv');
  const perRow = ((o.nHeads + 2 * c.nKvHeadsLocal) * hs) / 2;
  return makeOp(ctx, 'rope_kv', o.maxM, [p], (pass, m) => {
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bg);
    dispatchLinear(pass, Math.ceil((m * perRow) / 64));
  });
}
