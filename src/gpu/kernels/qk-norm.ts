/**
 * Qwen3's per-head q/k RMSNorm (shaders/qk_norm.wgsl): every q and k head of each row is
 * normalised in place with its shared weight, after the qkv matmul and before RoPE.
 */
import commonSrc from '../../../shaders/common.wgsl?raw';
import qkNormSrc from '../../../shaders/qk_norm.wgsl?raw';
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from '../core/device.js';
import { createParamBlock, type StepParams } from '../core/buffers.js';
import { wgsl } from '../core/layout.js';
import { bindGroup, dispatchLinear, makeOp, type BoundOp } from '../core/op.js';

const WG = 64;

export interface QkNormOptions {
  /** Rows of [q (nHeads·headSize) | k (nKv·headSize) | ...], rowStride floats apart; q and k are normalised in place. */
  qkv: GPUBuffer;
  rowStride: number;
  nHeads: number;
  nKv: number;
  headSize: number;
  /** Defaults: q at the start of a row, k right after it. */
  qOffset?: number;
  kOffset?: number;
  /** (2·headSize,) f32: the q norm's weight, then the k norm's. */
  weight: GPUBuffer;
  eps: number;
  maxM: number;
}

export function createQkNorm(ctx: GpuContext, step: StepParams, o: QkNormOptions): BoundOp {
  const hs = o.headSize;
  const qOff = o.qOffset ?? 0;
  const kOff = o.kOffset ?? qOff + o.nHeads * hs;
  if (!(hs > 0) || kOff + o.nKv * hs > o.rowStride) {
    throw new InvalidArgumentError(`qk_norm: ${o.nHeads} q and ${o.nKv} k heads of ${hs} from ${qOff} do not fit rows of ${o.rowStride}`);
  }
  if (o.weight.size < 2 * hs * 4) throw new InvalidArgumentError(`qk_norm: the weight buffer holds ${o.weight.size} bytes, expected ${2 * hs * 4} (q_norm then k_norm)`);
  const pipeline = ctx.pipelines.get(wgsl(commonSrc, qkNormSrc), 'qk_norm', {}, 'qk_norm');
  const p = createParamBlock(ctx, [o.nHeads, o.nKv, hs, o.rowStride, qOff, kOff, o.eps, 0], [6], 'qk_norm');
  const bg = bindGroup(ctx, pipeline, [step.buffer, p, o.qkv, o.weight], 'qk_norm');
  const perRow = o.nHeads + o.nKv;
  return makeOp(ctx, 'qk_norm', o.maxM, [p], (pass, m) => {
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bg);
    dispatchLinear(pass, Math.ceil((m * perRow) / WG));
  });
}
