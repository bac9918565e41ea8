/**
 * W4A8 matmul: Q4_0 weights with int8 activations, llama.cpp's CPU arithmetic for Q4_0 (the
 * input quantised per group of 32 as runq.c does, integer dot products per group, then both
 * scales). xin is first quantised into this op's scratch (the int8 front of matmul-base.ts, with
 * PAIRS: the layout matmul_q4a8.wgsl's multiplies take), with the f32 matmul's fused RMSNorm /
 * SiLU·mul inputs, then m = 1 runs a gemv (8 rows of W per invocation), m > 1 a 4×4
 * register-blocked gemm; one dispatch per row chunk of W.
 *
 * Why: on a CPU adapter (SwiftShader) the weight-only Q4_0 kernel spends on unpacking nibbles
 * to f32 what its smaller reads save; this one does two multiply-adds per u32 multiply.
 */
import commonSrc from '../../../shaders/common.wgsl?raw';
import q4a8Src from '../../../shaders/matmul_q4a8.wgsl?raw';
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from '../core/device.js';
import type { StepParams } from '../core/buffers.js';
import { wgsl } from '../core/layout.js';
import type { BoundOp } from '../core/op.js';
import type { QuantMatrix } from '../core/quant-matrix.js';
import { bindChunk, chunkBindings, chunkParams, fusedInput, gemvKernel, gemvOrGemm, int8Front, matmulIo, regblockKernel, type MatmulIo } from './matmul-base.js';
import { checkQ4 } from './matmul-q4.js';

/** Workgroup size and rows of W per invocation of gemv_q4a8 (its ROWS). */
const WG = 16;
const ROWS = 8;

export function createQ4A8Matmul(ctx: GpuContext, step: StepParams, o: MatmulIo & { w: QuantMatrix; continueSum?: boolean }): BoundOp {
  const { w, maxM } = o;
  const { K, xStride, xOffset, yStride } = matmulIo(step, o);
  checkQ4(w);
  if (o.continueSum) throw new InvalidArgumentError(`matmul ${w.label}: continueSum is runq.c's order for Q8_0 weights; W4A8 all-reduces`);
  const inp = fusedInput(ctx, o.input, xStride);
  const params: GPUBuffer[] = [];
  const gpr = K / 32;
  // 16 pair words (64 bytes) and (scale, Σ q) per group of 32 per row.
  const front = int8Front(ctx, { ...o, K, xStride, xOffset, inp, xqBytes: maxM * gpr * 64, xsBytes: maxM * gpr * 8, quantize: { GS: 32, PAIRS: 1 } });
  const code = wgsl(commonSrc, q4a8Src);
  const constants = { HAS_BIAS: o.bias ? 1 : 0, ACCUMULATE: o.accumulate ? 1 : 0 };
  const gemv = gemvKernel(ctx.pipelines.get(code, 'gemv_q4a8', { ...constants, WG }, 'gemv_q4a8'), ROWS * WG);
  const gemm = maxM > 1 ? regblockKernel(ctx.pipelines.get(code, 'gemm_q4a8', constants, 'gemm_q4a8')) : undefined;
  const chunks = w.chunks.map((c) => {
    const p = chunkParams(ctx, w.label, { K, rows: c.rows, kStride4: gpr, rowStart: c.rowStart, yStride });
    params.push(p);
    return bindChunk(ctx, w.label, c.rows, [gemv, gemm], chunkBindings(ctx, step, p, front.xq, c.q, o, front.xs, c.s));
  });
  return front.op(params, gemvOrGemm(gemv, gemm, chunks));
}
