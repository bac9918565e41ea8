/** Causal grouped-query attention over the KV cache (decode and prefill alike). */
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from '../core/device.js';
import { createParamBlock, createStorageBuffer, type StepParams } from '../core/buffers.js';
import { cacheAccess, type KvCache } from './kv-cache.js';
import { attentionWgsl, type AttentionKind } from './kv-shaders.js';
import { bindGroup, dispatchLinear, makeOp, type BoundOp } from '../core/op.js';

export interface AttentionOptions {
  /** q: row r's nHeads heads at qOffset + r·qStride (floats), e.g. the q part of a qkv buffer. */
  q: GPUBuffer;
  qStride: number;
  qOffset?: number;
  /** Query heads of this rank; a multiple of the cache's nKvHeadsLocal unless `kvGroup` is given. */
  nHeads: number;
  /**
   * Which kv head each query head reads when a rank's heads do not start on a kv-head boundary
   * (uneven splits): local head h reads local kv head floor((h + headOffset) / kvMul), with
   * kvMul the model's query heads per kv head. Default: kvMul = nHeads / nKvHeadsLocal, offset 0.
   */
  kvGroup?: { kvMul: number; headOffset: number };
  cache: KvCache;
  layer: number;
  /** out (maxM, outStride) f32: row r's heads at outOffset + r·outStride. */
  out: GPUBuffer;
  outStride?: number;
  outOffset?: number;
  maxM: number;
  /** Kernel variant (kv-shaders.ts); default: `subgroup` where it runs (see `attentionKinds`), else `workgroup`. */
  kind?: AttentionKind;
  /**
   * `exact` only: its scores, ≥ maxM·nHeads·cache.maxSeq floats. The ops of every layer can share
   * one (they run one after another); without it the op allocates its own.
   */
  scores?: GPUBuffer;
}

/** The variants this adapter can run for head size `hs`. */
export function attentionKinds(ctx: GpuContext, hs: number): AttentionKind[] {
  const f = ctx.features;
  const sg = f.subgroups && f.subgroupMinSize >= 4 && f.subgroupMinSize <= 128 && hs <= 64 * f.subgroupMinSize;
  return sg ? ['subgroup', 'workgroup'] : ['workgroup'];
}

export function createAttention(ctx: GpuContext, step: StepParams, o: AttentionOptions): BoundOp {
  const c = o.cache;
  const hs = c.headSize;
  if (!o.kvGroup && o.nHeads % c.nKvHeadsLocal !== 0) {
    throw new InvalidArgumentError(`attention: ${o.nHeads} query heads are not a multiple of ${c.nKvHeadsLocal} kv heads`);
  }
  const g = o.kvGroup ?? { kvMul: o.nHeads / c.nKvHeadsLocal, headOffset: 0 };
  if (!(Number.isInteger(g.kvMul) && g.kvMul >= 1 && Number.isInteger(g.headOffset) && g.headOffset >= 0 && Math.floor((o.nHeads - 1 + g.headOffset) / g.kvMul) < c.nKvHeadsLocal)) {
    throw new InvalidArgumentError(`attention: ${o.nHeads} query heads at offset ${g.headOffset} with ${g.kvMul} per kv head need more than the ${c.nKvHeadsLocal} kv heads cached`);
  }
  if (hs > 256) throw new InvalidArgumentError(`attention: head size ${hs} > 256 is not supported`);
  // Keys and values are read in pairs (whole words of an f16 cache); RoPE needs an even hs anyway.
  if (hs % 2 !== 0) throw new InvalidArgumentError(`attention: head size ${hs} is odd; the kernels read the cache in pairs`);
  const kind = o.kind ?? attentionKinds(ctx, hs)[0]!;
  if (kind !== 'exact' && !attentionKinds(ctx, hs).includes(kind)) throw new InvalidArgumentError(`attention: the ${kind} variant cannot run on this adapter`);
  const access = cacheAccess(ctx, c);
  const src = attentionWgsl(kind, access);
  const pipeline = kind === 'subgroup'
    ? ctx.pipelines.get(src, 'attention_sg', { WG: ctx.features.subgroupMinSize, U: access === 'f32' ? 1 : 2 }, 'attention_sg')
    : kind === 'exact'
      ? ctx.pipelines.get(src, 'attention_exact', { WG: EXACT_WG }, 'attention_exact')
      : ctx.pipelines.get(src, 'attention', {}, 'attention');
  const p = createParamBlock(
    ctx,
    [o.nHeads, c.nKvHeadsLocal, hs, c.maxSeq, o.qStride, o.qOffset ?? 0, o.outStride ?? o.nHeads * hs, o.outOffset ?? 0, Math.fround(Math.sqrt(hs)), g.kvMul, g.headOffset, 0],
    [8],
    'attention',
  );
  const scoreBytes = o.maxM * o.nHeads * c.maxSeq * 4;
  if (o.scores && o.scores.size < scoreBytes) throw new InvalidArgumentError(`attention: the scores buffer holds ${o.scores.size} bytes, ${scoreBytes} needed`);
  const own = kind === 'exact' && !o.scores ? createStorageBuffer(ctx, scoreBytes, 'attention scores') : undefined;
  const scores = kind === 'exact' ? (o.scores ?? own) : undefined;
  const bg = bindGroup(ctx, pipeline, [step.buffer, p, o.q, c.k[o.layer]!, c.v[o.layer]!, o.out, ...(scores ? [scores] : [])], 'attention');
  const op = makeOp(ctx, 'attention', o.maxM, [p], (pass, m) => {
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bg);
    dispatchLinear(pass, scores ? Math.ceil((m * o.nHeads) / EXACT_WG) : m * o.nHeads);
  });
  if (!own) return op;
  return {
    name: op.name,
    encode: op.encode,
    destroy() {
      op.destroy();
      own.destroy();
    },
  };
}

/** Invocations per workgroup of the exact kernel (one per (row, head)). */
const EXACT_WG = 64;
