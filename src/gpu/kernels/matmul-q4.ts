/**
 * Matmuls with Q4_0 weights (a `QuantMatrix` of kind 'q4_0'), weight-only: activations stay f32
 * and W is dequantised inside the kernel, with the f32 matmul's fused RMSNorm / SiLU·mul inputs,
 * bias and accumulate. m = 1 runs a gemv (four rows of W per invocation), m > 1 a 4×4
 * register-blocked gemm; one dispatch per row chunk of W. Neither uses workgroup memory or
 * barriers, which CPU adapters pay most for (as the Q8_0 kernels, matmul-q8.ts).
 */
import commonSrc from '../../../shaders/common.wgsl?raw';
import matmulCommonSrc from '../../../shaders/matmul_common.wgsl?raw';
import q4Src from '../../../shaders/matmul_q4.wgsl?raw';
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from '../core/device.js';
import type { StepParams } from '../core/buffers.js';
import { wgsl } from '../core/layout.js';
import { makeOp, type BoundOp } from '../core/op.js';
import type { QuantMatrix } from '../core/quant-matrix.js';
import {
  bindChunk, chunkBindings, chunkParams, fusedInput, gemvKernel, gemvOrGemm, matmulIo, regblockKernel, vec4Rows, xLoads, type MatmulIo,
} from './matmul-base.js';

const WG = 64;

/** Checks that `w` is Q4_0 in groups of 32 along k (what the Q4_0 kernels read). */
export function checkQ4(w: QuantMatrix): void {
  if (w.kind !== 'q4_0' || w.groupSize !== 32 || w.k % 32 !== 0) throw new InvalidArgumentError(`matmul ${w.label}: expected Q4_0 weights in groups of 32 along k ${w.k}`);
}

export function createQ4Matmul(ctx: GpuContext, step: StepParams, o: MatmulIo & { w: QuantMatrix }): BoundOp {
  const { w, maxM } = o;
  const { K, xStride, xOffset, yStride } = matmulIo(step, o);
  checkQ4(w);
  const inp = fusedInput(ctx, o.input, xStride);
  const code = wgsl(commonSrc, matmulCommonSrc, xLoads(vec4Rows(K, xStride, xOffset, inp)), q4Src);
  const constants = { HAS_BIAS: o.bias ? 1 : 0, ACCUMULATE: o.accumulate ? 1 : 0, MODE: inp.mode, ALIGNED: 1 };
  const gemv = gemvKernel(ctx.pipelines.get(code, 'gemv_q4', { ...constants, WG }, 'gemv_q4'), 4 * WG);
  const gemm = maxM > 1 ? regblockKernel(ctx.pipelines.get(code, 'gemm_q4', constants, 'gemm_q4')) : undefined;
  const params: GPUBuffer[] = [];
  const chunks = w.chunks.map((c) => {
    // kStride4 carries the row stride in words: K/8 (eight nibbles a word).
    const p = chunkParams(ctx, w.label, { K, rows: c.rows, kStride4: K / 8, rowStart: c.rowStart, yStride }, { xStride, xOffset, inp });
    params.push(p);
    return bindChunk(ctx, w.label, c.rows, [gemv, gemm], chunkBindings(ctx, step, p, o.x, c.q, o, inp.aux, c.s));
  });
  return makeOp(ctx, `matmul ${w.label}`, maxM, params, gemvOrGemm(gemv, gemm, chunks));
}
