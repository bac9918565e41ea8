/**
 * Matmuls with Q4_0 weights (a `QuantMatrix` of kind 'q4_0'), weight-only: activations stay f32
 * and W is dequantised inside the kernel, with the f32 matmul's fused RMSNorm / SiLU·mul inputs,
 * bias and accumulate. m = 1 runs a gemv (four rows of W per invocation), m > 1 a 4×4
 * register-blocked gemm; one dispatch per row chunk of W. Neither uses workgroup memory or
 * barriers, which CPU adapters pay most for (as the Q8_0 kernels, matmul-q8.ts).
 */
import commonSrc from '../../shaders/common.wgsl?raw';
import matmulCommonSrc from '../../shaders/matmul_common.wgsl?raw';
import xF32Src from '../../shaders/matmul_x_f32.wgsl?raw';
import xVec4Src from '../../shaders/matmul_x_vec4.wgsl?raw';
import q4Src from '../../shaders/matmul_q4.wgsl?raw';
import embedSrc from '../../shaders/embed_q4.wgsl?raw';
import { InvalidArgumentError } from '../errors.js';
import type { GpuContext } from './device.js';
import { createParamBlock, type StepParams } from './buffers.js';
import { wgsl } from './layout.js';
import { makeOp, type BoundOp } from './op.js';
import type { QuantMatrix } from './q8.js';
import { createTableEmbed, type EmbedIo } from './embed.js';
import { bindChunk, encodeChunks, inputOf, matmulIo, type Q8MatmulOptions } from './matmul-q8.js';

const WG = 64;

export function createQ4Matmul(ctx: GpuContext, step: StepParams, o: Omit<Q8MatmulOptions, 'activations'>): BoundOp {
  const { w, maxM } = o;
  const { K, xStride, xOffset, yStride } = matmulIo(step, o);
  if (w.kind !== 'q4_0' || w.groupSize !== 32 || K % 32 !== 0) throw new InvalidArgumentError(`matmul ${w.label}: expected Q4_0 weights in groups of 32 along k ${K}`);
  const inp = inputOf(ctx, o.input, xStride);
  const aligned4 = (...v: number[]) => v.every((q) => q % 4 === 0);
  const xSrc = aligned4(xStride, xOffset) && (inp.mode !== 2 || aligned4(inp.bStride, inp.bOff)) ? xVec4Src : xF32Src;
  const code = wgsl(commonSrc, matmulCommonSrc, xSrc, q4Src);
  const constants = { HAS_BIAS: o.bias ? 1 : 0, ACCUMULATE: o.accumulate ? 1 : 0, MODE: inp.mode, ALIGNED: 1 };
  const gemv = ctx.pipelines.get(code, 'gemv_q4', { ...constants, WG }, 'gemv_q4');
  const gemm = maxM > 1 ? ctx.pipelines.get(code, 'gemm_q4', constants, 'gemm_q4') : undefined;
  const params: GPUBuffer[] = [];
  const chunks = w.chunks.map((c) => {
    // kStride4 carries the row stride in words: K/8 (eight nibbles a word).
    const p = createParamBlock(ctx, [K, c.rows, K / 8, c.rowStart, yStride, xStride, xOffset, inp.bStride, inp.bOff, inp.eps, 0, 0], [9], `matmul ${w.label}`);
    params.push(p);
    return bindChunk(ctx, w.label, c.rows, gemv, gemm, (usesStep) => [usesStep ? step.buffer : undefined, p, o.x, c.q, o.y, o.bias ?? ctx.dummy, inp.aux, c.s]);
  });
  return makeOp(ctx, `matmul ${w.label}`, maxM, params, (pass, m) => {
    encodeChunks(pass, m, chunks, gemv, gemm, 4 * WG);
  });
}

/** y[r] = the dequantised row tokens[r] of a Q4_0 table (see createEmbed for the options). */
export function createEmbedQ4(ctx: GpuContext, step: StepParams, o: EmbedIo & { table: QuantMatrix }): BoundOp {
  if (o.table.kind !== 'q4_0') throw new InvalidArgumentError(`embedding ${o.table.label}: expected a Q4_0 table, got ${o.table.kind}`);
  const chunks = o.table.chunks.map((c) => ({ rowStart: c.rowStart, rows: c.rows, values: c.q, scales: c.s }));
  const dim = o.table.k;
  return createTableEmbed(ctx, step, o, { entry: 'embed_q4', sources: [embedSrc], dim, rowWords: dim / 8, groupSize: 32 }, chunks);
}
