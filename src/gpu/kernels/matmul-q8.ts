/**
 * Matmuls with Q8_0 weights (`QuantMatrix`), dequantised inside the kernel:
 *   activations 'f32'  (weight-only): y (+)= xin · Wᵀ with the fused RMSNorm / SiLU·mul inputs
 *                      of the f32 matmul; w = q · scale. q8_m weights (GGUF's Q4_1, Q5_x and
 *                      K-quants) run the same kernels with w = code · scale + min.
 *   activations 'int8' (W8A8, llama2.c's runq.c): xin is first quantised per group of the
 *                      weights' group size (the int8 front of matmul-base.ts), then each group's
 *                      int8 dot product is summed exactly and scaled by both scales.
 * m = 1 runs a gemv (rows of W per invocation: 4 weight-only, 1 W8A8), m > 1 a register-blocked
 * gemm; one dispatch per row chunk of W. None uses workgroup memory or barriers, which CPU
 * adapters pay most for.
 */
import commonSrc from '../../../shaders/common.wgsl?raw';
import matmulCommonSrc from '../../../shaders/matmul_common.wgsl?raw';
import unpackSrc from '../../../shaders/q8_unpack.wgsl?raw';
import q8Src from '../../../shaders/matmul_q8.wgsl?raw';
import q8WeightsSrc from '../../../shaders/q8_weights.wgsl?raw';
import q8mWeightsSrc from '../../../shaders/q8m_weights.wgsl?raw';
import q8a8Src from '../../../shaders/matmul_q8a8.wgsl?raw';
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from '../core/device.js';
import type { StepParams } from '../core/buffers.js';
import { wgsl } from '../core/layout.js';
import { makeOp, type BoundOp } from '../core/op.js';
import type { QuantMatrix } from '../core/quant-matrix.js';
import {
  bindChunk, chunkBindings, chunkParams, fusedInput, gemvKernel, gemvOrGemm, int8Front, matmulIo, regblockKernel, vec4Rows, xLoads,
  type MatmulIo, type Q8Activations,
} from './matmul-base.js';

export interface Q8MatmulOptions extends MatmulIo {
  w: QuantMatrix;
  activations: Q8Activations;
  /** W8A8 only: the sum over groups starts from y's value (see MatmulOptions.continueSum). */
  continueSum?: boolean;
}

const WG = 64;

export function createQ8Matmul(ctx: GpuContext, step: StepParams, o: Q8MatmulOptions): BoundOp {
  const { w, maxM } = o;
  const { K, xStride, xOffset, yStride } = matmulIo(step, o);
  const GS = w.groupSize;
  if (o.continueSum && (o.activations !== 'int8' || o.accumulate || o.bias)) {
    throw new InvalidArgumentError(`matmul ${w.label}: continueSum is for W8A8 matmuls without accumulate or bias`);
  }
  const inp = fusedInput(ctx, o.input, xStride);
  const common = { HAS_BIAS: o.bias ? 1 : 0, ACCUMULATE: o.accumulate ? 1 : 0, GS };
  const params: GPUBuffer[] = [];

  if (o.activations === 'f32') {
    const weights = w.kind === 'q8_m' ? q8mWeightsSrc : q8WeightsSrc;
    const code = wgsl(commonSrc, matmulCommonSrc, xLoads(vec4Rows(K, xStride, xOffset, inp)), unpackSrc, weights, q8Src);
    const constants = { ...common, MODE: inp.mode, ALIGNED: 1 };
    const gemv = gemvKernel(ctx.pipelines.get(code, 'gemv_q8', { ...constants, WG }, 'gemv_q8'), 4 * WG);
    const gemm = maxM > 1 ? regblockKernel(ctx.pipelines.get(code, 'gemm_q8', constants, 'gemm_q8')) : undefined;
    const chunks = w.chunks.map((c) => {
      const p = chunkParams(ctx, w.label, { K, rows: c.rows, kStride4: K / 4, rowStart: c.rowStart, yStride }, { xStride, xOffset, inp });
      params.push(p);
      return bindChunk(ctx, w.label, c.rows, [gemv, gemm], chunkBindings(ctx, step, p, o.x, c.q, o, inp.aux, c.s));
    });
    return makeOp(ctx, `matmul ${w.label}`, maxM, params, gemvOrGemm(gemv, gemm, chunks));
  }

  if (w.kind !== 'q8_0') throw new InvalidArgumentError(`matmul ${w.label}: int8 activations need Q8_0 weights, got ${w.kind}`);
  // W8A8: quantise xin into this op's scratch, then the integer matmul.
  const front = int8Front(ctx, { ...o, K, xStride, xOffset, inp, xqBytes: maxM * K, xsBytes: (maxM * K) / GS * 4, quantize: { GS } });
  const code = wgsl(commonSrc, unpackSrc, q8a8Src);
  const a8 = { ...common, CONTINUE: o.continueSum ? 1 : 0 };
  const gemv = gemvKernel(ctx.pipelines.get(code, 'gemv_q8a8', { ...a8, WG }, 'gemv_q8a8'), WG);
  const gemm = maxM > 1 ? regblockKernel(ctx.pipelines.get(code, 'gemm_q8a8', a8, 'gemm_q8a8')) : undefined;
  const chunks = w.chunks.map((c) => {
    const p = chunkParams(ctx, w.label, { K, rows: c.rows, kStride4: K / 4, rowStart: c.rowStart, yStride });
    params.push(p);
    return bindChunk(ctx, w.label, c.rows, [gemv, gemm], chunkBindings(ctx, step, p, front.xq, c.q, o, front.xs, c.s));
  });
  return front.op(params, gemvOrGemm(gemv, gemm, chunks));
}
