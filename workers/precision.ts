/** The weights' part of a rank's `stats().precision` (src/engine/types.ts): what they are stored as, and which f16 kernels its device runs. */
import type { RankPrecision } from '../src/engine/types.js';
import type { GpuContext } from '../src/gpu/core/device.js';
import { f16KernelsFor } from '../src/gpu/kernels/f16-shaders.js';
import { isHalfMatrix } from '../src/gpu/core/half-matrix.js';
import { isQuantMatrix } from '../src/gpu/core/quant-matrix.js';
import type { ShardWeights, Weight } from './gpu-weights.js';

function dtypeOf(w: Weight): RankPrecision['weights'] {
  return isHalfMatrix(w) ? 'f16' : isQuantMatrix(w) ? w.kind : 'f32';
}

export function rankPrecision(ctx: GpuContext | undefined, w: ShardWeights | undefined): Pick<RankPrecision, 'weights' | 'math' | 'f16Kernels'> {
  const matrices = w ? [w.tokEmbeddings, w.output, ...w.layers.flatMap((l) => [l.wqkv, l.wo, l.w13, l.w2])] : [];
  const kinds = new Set(matrices.map(dtypeOf));
  return {
    weights: kinds.size === 1 ? [...kinds][0]! : kinds.size === 0 ? 'f32' : 'mixed',
    // Every weight kernel, f16 included, multiplies and sums in f32 (matmul_w_f16_native.wgsl says why).
    math: 'f32',
    f16Kernels: ctx ? f16KernelsFor(ctx.device.features) : 'packed',
  };
}
