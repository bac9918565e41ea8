/**
 * Matmuls with Q8_0 weights (`QuantMatrix`), dequantised inside the kernel:
 *   activations 'f32'  (weight-only): y (+)= xin · Wᵀ with the fused RMSNorm / SiLU·mul inputs
 *                      of the f32 matmul; w = q · scale.
 *   activations 'int8' (W8A8, llama2.c's runq.c): xin is first quantised per group of the
 *                      weights' group size (quantize_q8.wgsl, into this op's own scratch), then
 *                      each group's int8 dot product is summed exactly and scaled by both scales.
 * m = 1 runs a gemv (rows of W per invocation: 4 weight-only, 1 W8A8), m > 1 a register-blocked gemm; one dispatch per
 * row chunk of W. None uses workgroup memory or barriers, which CPU adapters pay most for.
 */
import commonSrc from '../../shaders/common.wgsl?raw';
import matmulCommonSrc from '../../shaders/matmul_common.wgsl?raw';
import xF32Src from '../../shaders/matmul_x_f32.wgsl?raw';
import xVec4Src from '../../shaders/matmul_x_vec4.wgsl?raw';
import unpackSrc from '../../shaders/q8_unpack.wgsl?raw';
import q8Src from '../../shaders/matmul_q8.wgsl?raw';
import q8a8Src from '../../shaders/matmul_q8a8.wgsl?raw';
import quantizeSrc from '../../shaders/quantize_q8.wgsl?raw';
import exactMathSrc from '../../shaders/exact_math.wgsl?raw';
import embedSrc from '../../shaders/embed_q8.wgsl?raw';
import { InvalidArgumentError } from '../errors.js';
import type { GpuContext } from './device.js';
import { createParamBlock, createStorageBuffer, type StepParams } from './buffers.js';
import { grid2d, wgsl } from './layout.js';
import { bindGroup, makeOp, type Binding, type BoundOp } from './op.js';
import type { QuantMatrix } from './q8.js';
import { createTableEmbed, type EmbedIo } from './embed.js';
import type { MatmulInput } from './matmul.js';

/** How a Q8_0 matmul treats its input: f32 as it is, or quantised to int8 per group (runq.c). */
export type Q8Activations = 'f32' | 'int8';

export interface Q8MatmulOptions {
  x: GPUBuffer;
  xStride?: number;
  xOffset?: number;
  w: QuantMatrix;
  y: GPUBuffer;
  yStride?: number;
  bias?: GPUBuffer;
  accumulate?: boolean;
  /** W8A8 only: the sum over groups starts from y's value (see MatmulOptions.continueSum). */
  continueSum?: boolean;
  input?: MatmulInput;
  maxM: number;
  activations: Q8Activations;
}

const WG = 64;

/** The fused input's shader MODE, its binding and parameters (shared with the Q4_0 matmul). */
export function inputOf(ctx: GpuContext, input: MatmulInput | undefined, xStride: number) {
  if (input?.kind === 'rmsnorm') return { mode: 1, aux: input.weight as Binding, eps: input.eps, bStride: 0, bOff: 0 };
  if (input?.kind === 'siluMul') return { mode: 2, aux: input.b as Binding, eps: 0, bStride: input.bStride ?? xStride, bOff: input.bOffset ?? 0 };
  return { mode: 0, aux: ctx.dummy as Binding, eps: 0, bStride: 0, bOff: 0 };
}

/** Workgroups of a 4×4-register-block gemm (8×8 invocations): 32 rows of W by 32 rows of x each. */
/**
 * A matmul's x and y layout (strides default to dense rows), checked against the step and the
 * buffers: what every weight kind's wrapper validates before building anything.
 */
export function matmulIo(
  step: StepParams,
  o: { w: { k: number; n: number; label: string }; maxM: number; x: GPUBuffer; y: GPUBuffer; bias?: GPUBuffer; xStride?: number; xOffset?: number; yStride?: number },
): { K: number; N: number; xStride: number; xOffset: number; yStride: number } {
  const { w, maxM } = o;
  const K = w.k;
  const N = w.n;
  const xStride = o.xStride ?? K;
  const xOffset = o.xOffset ?? 0;
  const yStride = o.yStride ?? N;
  if (maxM > step.maxM) throw new InvalidArgumentError(`matmul ${w.label}: maxM ${maxM} exceeds the step's ${step.maxM}`);
  if (xStride < K) throw new InvalidArgumentError(`matmul ${w.label}: x stride ${xStride} < K ${K}`);
  if (o.x.size < (xOffset + (maxM - 1) * xStride + K) * 4) throw new InvalidArgumentError(`matmul ${w.label}: x buffer too small for ${maxM}×${K}`);
  if (o.y.size < ((maxM - 1) * yStride + N) * 4) throw new InvalidArgumentError(`matmul ${w.label}: y buffer too small for ${maxM}×${N}`);
  if (o.bias && o.bias.size < N * 4) throw new InvalidArgumentError(`matmul ${w.label}: bias needs ${N} floats`);
  return { K, N, xStride, xOffset, yStride };
}

export function regblockGrid(rows: number, m: number): [number, number, number] {
  const [x, z] = grid2d(Math.ceil(rows / 32));
  return [x, Math.ceil(m / 32), z];
}

/** One row chunk of W, bound for the gemv and (when m can exceed 1) the register-blocked gemm. */
export interface ChunkBinding {
  rows: number;
  gemvBg: GPUBindGroup;
  gemmBg?: GPUBindGroup;
}

/**
 * Binds a chunk for both kernels. `bindings(usesStep)`: the gemv is always m = 1, so it has no
 * use for (and no binding of) the step block.
 */
export function bindChunk(
  ctx: GpuContext, label: string, rows: number, gemv: GPUComputePipeline, gemm: GPUComputePipeline | undefined,
  bindings: (usesStep: boolean) => (Binding | undefined)[],
): ChunkBinding {
  return { rows, gemvBg: bindGroup(ctx, gemv, bindings(false), label), gemmBg: gemm ? bindGroup(ctx, gemm, bindings(true), label) : undefined };
}

/**
 * Encodes a chunked matmul: m = 1 runs the gemv (`gemvRows` rows of W per workgroup), m > 1 the
 * register-blocked gemm; one dispatch per chunk.
 */
export function encodeChunks(
  pass: GPUComputePassEncoder, m: number, chunks: readonly ChunkBinding[],
  gemv: GPUComputePipeline, gemm: GPUComputePipeline | undefined, gemvRows: number,
): void {
  const useGemm = m > 1 && gemm;
  pass.setPipeline(useGemm ? gemm : gemv);
  for (const c of chunks) {
    pass.setBindGroup(0, useGemm ? c.gemmBg! : c.gemvBg);
    if (useGemm) pass.dispatchWorkgroups(...regblockGrid(c.rows, m));
    else pass.dispatchWorkgroups(...grid2d(Math.ceil(c.rows / gemvRows)), 1);
  }
}

export function createQ8Matmul(ctx: GpuContext, step: StepParams, o: Q8MatmulOptions): BoundOp {
  const { w, maxM } = o;
  const { K, xStride, xOffset, yStride } = matmulIo(step, o);
  const GS = w.groupSize;
  if (o.continueSum && (o.activations !== 'int8' || o.accumulate || o.bias)) {
    throw new InvalidArgumentError(`matmul ${w.label}: continueSum is for W8A8 matmuls without accumulate or bias`);
  }
  const inp = inputOf(ctx, o.input, xStride);
  const common = { HAS_BIAS: o.bias ? 1 : 0, ACCUMULATE: o.accumulate ? 1 : 0, GS };
  const params: GPUBuffer[] = [];

  if (o.activations === 'f32') {
    const aligned4 = (...v: number[]) => v.every((q) => q % 4 === 0);
    const xSrc = aligned4(xStride, xOffset) && (inp.mode !== 2 || aligned4(inp.bStride, inp.bOff)) ? xVec4Src : xF32Src;
    const code = wgsl(commonSrc, matmulCommonSrc, xSrc, unpackSrc, q8Src);
    const constants = { ...common, MODE: inp.mode, ALIGNED: 1 };
    const gemv = ctx.pipelines.get(code, 'gemv_q8', { ...constants, WG }, 'gemv_q8');
    const gemm = maxM > 1 ? ctx.pipelines.get(code, 'gemm_q8', constants, 'gemm_q8') : undefined;
    const chunks = w.chunks.map((c) => {
      const p = createParamBlock(ctx, [K, c.rows, K / 4, c.rowStart, yStride, xStride, xOffset, inp.bStride, inp.bOff, inp.eps, 0, 0], [9], `matmul ${w.label}`);
      params.push(p);
      return bindChunk(ctx, w.label, c.rows, gemv, gemm, (usesStep) => [usesStep ? step.buffer : undefined, p, o.x, c.q, o.y, o.bias ?? ctx.dummy, inp.aux, c.s]);
    });
    return makeOp(ctx, `matmul ${w.label}`, maxM, params, (pass, m) => {
      encodeChunks(pass, m, chunks, gemv, gemm, 4 * WG);
    });
  }

  // W8A8: quantise xin into this op's scratch, then the integer matmul.
  const front = int8Front(ctx, { ...o, K, xStride, xOffset, inp, xqBytes: maxM * K, xsBytes: (maxM * K) / GS * 4, quantize: { GS } });
  const code = wgsl(commonSrc, unpackSrc, q8a8Src);
  const a8 = { ...common, CONTINUE: o.continueSum ? 1 : 0 };
  const gemv = ctx.pipelines.get(code, 'gemv_q8a8', { ...a8, WG }, 'gemv_q8a8');
  const gemm = maxM > 1 ? ctx.pipelines.get(code, 'gemm_q8a8', a8, 'gemm_q8a8') : undefined;
  const chunks = w.chunks.map((c) => {
    const p = createParamBlock(ctx, [K, c.rows, K / 4, c.rowStart, yStride, 0, 0, 0], [], `matmul ${w.label}`);
    params.push(p);
    return bindChunk(ctx, w.label, c.rows, gemv, gemm, (usesStep) => [usesStep ? step.buffer : undefined, p, front.xq, c.q, o.y, o.bias ?? ctx.dummy, front.xs, c.s]);
  });
  return front.op(params, (pass, m) => encodeChunks(pass, m, chunks, gemv, gemm, WG));
}

/**
 * The front of an int8-activation matmul (W8A8 here, W4A8 in matmul-q4a8.ts): scratch of its
 * own for xin quantised per group (`xqBytes` of values, `xsBytes` of scales), filled by
 * quantize_q8.wgsl (with `quantize`'s constants; the fused RMSNorm / SiLU·mul inputs included).
 * `op` makes the bound op that runs that pass, then the integer matmul's `encode`, and frees the
 * scratch and both ops' parameter blocks with itself.
 */
export function int8Front(
  ctx: GpuContext,
  o: {
    w: { label: string }; x: GPUBuffer; maxM: number; K: number; xStride: number; xOffset: number;
    inp: ReturnType<typeof inputOf>; xqBytes: number; xsBytes: number; quantize: { GS: number; PAIRS?: number };
  },
): { xq: GPUBuffer; xs: GPUBuffer; op(params: GPUBuffer[], encode: (pass: GPUComputePassEncoder, m: number) => void): BoundOp } {
  const { label } = o.w;
  const { inp } = o;
  const xq = createStorageBuffer(ctx, o.xqBytes, `${label}.xq`);
  const xs = createStorageBuffer(ctx, o.xsBytes, `${label}.xs`);
  const quant = ctx.pipelines.get(wgsl(commonSrc, exactMathSrc, quantizeSrc), 'quantize_q8', { MODE: inp.mode, ...o.quantize }, o.quantize.PAIRS ? 'quantize_q8 pairs' : 'quantize_q8');
  const qp = createParamBlock(ctx, [o.K, o.xStride, o.xOffset, inp.bStride, inp.bOff, inp.eps, 0, 0], [5], `quantize ${label}`);
  const quantBg = bindGroup(ctx, quant, [undefined, qp, o.x, inp.aux, xq, xs], `quantize ${label}`);
  return {
    xq,
    xs,
    op(params, encode) {
      const op = makeOp(ctx, `matmul ${label}`, o.maxM, [qp, ...params], (pass, m) => {
        pass.setPipeline(quant);
        pass.setBindGroup(0, quantBg);
        pass.dispatchWorkgroups(...grid2d(m), 1);
        encode(pass, m);
      });
      return {
        name: op.name,
        encode: op.encode,
        destroy() {
          op.destroy();
          xq.destroy();
          xs.destroy();
        },
      };
    },
  };
}

/** y[r] = the dequantised row tokens[r] of a Q8_0 table (see createEmbed for the options). */
export function createEmbedQ8(ctx: GpuContext, step: StepParams, o: EmbedIo & { table: QuantMatrix }): BoundOp {
  const chunks = o.table.chunks.map((c) => ({ rowStart: c.rowStart, rows: c.rows, values: c.q, scales: c.s }));
  const dim = o.table.k;
  return createTableEmbed(ctx, step, o, { entry: 'embed_q8', sources: [unpackSrc, embedSrc], dim, rowWords: dim / 4, groupSize: o.table.groupSize }, chunks);
}

