/**
 * y (+)= xin · Wᵀ with f16 W (`HalfMatrix`), with the f32 matmul's fused RMSNorm / SiLU·mul
 * inputs, bias and accumulate. m = 1 runs a gemv (four rows of W per invocation), m > 1 a 4×4
 * register-blocked gemm; one dispatch per row chunk of W. The WGSL (packed or native halves) is
 * f16-shaders.ts's.
 */
import type { GpuContext } from '../core/device.js';
import type { StepParams } from '../core/buffers.js';
import type { HalfMatrix } from '../core/half-matrix.js';
import { makeOp, type BoundOp } from '../core/op.js';
import { f16KernelsOf, f16MatmulWgsl } from './f16-shaders.js';
import { bindChunk, chunkBindings, chunkParams, fusedInput, gemvKernel, gemvOrGemm, matmulIo, regblockKernel, vec4Rows, type MatmulIo } from './matmul-base.js';

const WG = 64;

export function createF16Matmul(ctx: GpuContext, step: StepParams, o: MatmulIo & { w: HalfMatrix }): BoundOp {
  const { w, maxM } = o;
  const { K, xStride, xOffset, yStride } = matmulIo(step, o);
  const inp = fusedInput(ctx, o.input, xStride);
  const code = f16MatmulWgsl(f16KernelsOf(ctx), vec4Rows(K, xStride, xOffset, inp));
  const constants = { HAS_BIAS: o.bias ? 1 : 0, ACCUMULATE: o.accumulate ? 1 : 0, MODE: inp.mode, ALIGNED: K % 4 === 0 ? 1 : 0 };
  const gemv = gemvKernel(ctx.pipelines.get(code, 'gemv_f16', { ...constants, WG }, 'gemv_f16'), 4 * WG);
  const gemm = maxM > 1 ? regblockKernel(ctx.pipelines.get(code, 'gemm_regblock', constants, 'gemm_f16')) : undefined;
  const params: GPUBuffer[] = [];
  const chunks = w.chunks.map((c) => {
    // kStride4: the row stride in groups of 4 halves (one vec2<u32>).
    const p = chunkParams(ctx, w.label, { K, rows: c.rows, kStride4: w.stride / 4, rowStart: c.rowStart, yStride }, { xStride, xOffset, inp });
    params.push(p);
    return bindChunk(ctx, w.label, c.rows, [gemv, gemm], chunkBindings(ctx, step, p, o.x, c.buffer, o, inp.aux));
  });
  return makeOp(ctx, `matmul ${w.label}`, maxM, params, gemvOrGemm(gemv, gemm, chunks));
}
