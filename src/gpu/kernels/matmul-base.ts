/**
 * What every weight dtype's matmul shares: the x / y layout and its checks, the fused input
 * (RMSNorm or SiLU·mul done in the loads), the per-chunk parameter block, binding each row chunk
 * of W for each kernel, dispatching the chunks, and the int8 front that quantises xin per group
 * for the integer kernels (W8A8, W4A8). matmul-f32/f16/q8/q4/q4a8.ts each pick their kernels and
 * build on these; matmul.ts picks among them by the weights' dtype.
 */
import commonSrc from '../../../shaders/common.wgsl?raw';
import xF32Src from '../../../shaders/matmul_x_f32.wgsl?raw';
import xVec4Src from '../../../shaders/matmul_x_vec4.wgsl?raw';
import quantizeSrc from '../../../shaders/quantize_q8.wgsl?raw';
import exactMathSrc from '../../../shaders/exact_math.wgsl?raw';
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from '../core/device.js';
import { createParamBlock, createStorageBuffer, type StepParams } from '../core/buffers.js';
import { grid2d, wgsl } from '../core/layout.js';
import { bindGroup, makeOp, type Binding, type BoundOp } from '../core/op.js';

/** Input transform fused into the matmul's loads. */
export type MatmulInput =
  | { kind: 'plain' }
  /** xin = rmsnorm(x)·weight: x's own rows are normalized on the fly (x is left as it is). */
  | { kind: 'rmsnorm'; weight: GPUBuffer; eps: number }
  /**
   * xin[r][k] = silu(a[r][k])·b[r][k] with a = x at (xOffset + r·xStride) and b at
   * (bOffset + r·bStride) of `b` (floats); pass x itself as `b` when a and b are halves of one row.
   */
  | { kind: 'siluMul'; b: GPUBuffer; bStride?: number; bOffset?: number };

/**
 * How a quantised matmul treats its input: f32 as it is (weight-only), or quantised to int8 per
 * group first: W8A8 for Q8_0 (runq.c), W4A8 for Q4_0 (llama.cpp's CPU Q4_0 × Q8_0).
 */
export type Q8Activations = 'f32' | 'int8';

/** The options of every dtype's matmul but the weights. */
export interface MatmulIo {
  /** x (maxM, xStride) f32; row r starts at float xOffset + r·xStride. */
  x: GPUBuffer;
  xStride?: number;
  xOffset?: number;
  /** y (maxM, yStride) f32; defaults yStride = N. */
  y: GPUBuffer;
  yStride?: number;
  /** bias (N) f32, added to every row. */
  bias?: GPUBuffer;
  /** y += result instead of y = result (fuses a residual add). */
  accumulate?: boolean;
  input?: MatmulInput;
  maxM: number;
}

/** The weights' geometry as the layout checks need it. */
interface Weights {
  k: number;
  n: number;
  label: string;
}

/**
 * A matmul's x and y layout (strides default to dense rows), checked against the step and the
 * buffers: what every weight kind's matmul validates before building anything.
 */
export function matmulIo(step: StepParams, o: MatmulIo & { w: Weights }): { K: number; N: number; xStride: number; xOffset: number; yStride: number } {
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

/** The fused input as the kernels take it: shader MODE, the AUX binding and its parameters. */
export interface FusedInput {
  mode: number;
  aux: Binding;
  eps: number;
  bStride: number;
  bOff: number;
}

export function fusedInput(ctx: GpuContext, input: MatmulInput | undefined, xStride: number): FusedInput {
  if (input?.kind === 'rmsnorm') return { mode: 1, aux: input.weight, eps: input.eps, bStride: 0, bOff: 0 };
  if (input?.kind === 'siluMul') return { mode: 2, aux: input.b, eps: 0, bStride: input.bStride ?? xStride, bOff: input.bOffset ?? 0 };
  return { mode: 0, aux: ctx.dummy, eps: 0, bStride: 0, bOff: 0 };
}

const aligned4 = (...v: number[]) => v.every((q) => q % 4 === 0);

/** Whether every row of x (and of the SiLU·mul's b) starts on a vec4, so the kernels may load whole vec4s. */
export function vec4Rows(K: number, xStride: number, xOffset: number, inp: FusedInput): boolean {
  return aligned4(K, xStride, xOffset) && (inp.mode !== 2 || aligned4(inp.bStride, inp.bOff));
}

/** The WGSL that loads x for the kernels: vec4 loads (`vec4Rows`) or single floats. */
export function xLoads(vec4: boolean): string {
  return vec4 ? xVec4Src : xF32Src;
}

/**
 * The parameter block of one row chunk of W: [K, rows, kStride4, rowStart, yStride], then for
 * kernels that read x themselves its layout and the fused input's parameters (eps a float).
 * `kStride4` is the row stride in whatever words the kernel reads W in.
 */
export function chunkParams(
  ctx: GpuContext, label: string,
  c: { K: number; rows: number; kStride4: number; rowStart: number; yStride: number },
  x?: { xStride: number; xOffset: number; inp: { bStride: number; bOff: number; eps: number } },
): GPUBuffer {
  const head = [c.K, c.rows, c.kStride4, c.rowStart, c.yStride];
  if (!x) return createParamBlock(ctx, [...head, 0, 0, 0], [], `matmul ${label}`);
  return createParamBlock(ctx, [...head, x.xStride, x.xOffset, x.inp.bStride, x.inp.bOff, x.inp.eps, 0, 0], [9], `matmul ${label}`);
}

/** One kernel of a matmul: its pipeline and its workgroups for a chunk of `rows` rows of W and m rows of x. */
export interface MatmulKernel {
  pipeline: GPUComputePipeline;
  /** Whether it binds the step block (a gemv is always m = 1, so it has no use for it). */
  usesStep: boolean;
  grid(rows: number, m: number): [number, number, number];
}

/** A gemv covering `rowsPerWorkgroup` rows of W per workgroup. */
export function gemvKernel(pipeline: GPUComputePipeline, rowsPerWorkgroup: number): MatmulKernel {
  return { pipeline, usesStep: false, grid: (rows) => [...grid2d(Math.ceil(rows / rowsPerWorkgroup)), 1] };
}

/** A gemm of `rowsW` × `rowsX` blocks per workgroup (rows of W folded into x and z, rows of x along y). */
export function gemmKernel(pipeline: GPUComputePipeline, rowsW: number, rowsX: number): MatmulKernel {
  return {
    pipeline,
    usesStep: true,
    grid: (rows, m) => {
      const [x, z] = grid2d(Math.ceil(rows / rowsW));
      return [x, Math.ceil(m / rowsX), z];
    },
  };
}

/** A 4×4-register-block gemm of 8×8 invocations: 32 rows of W by 32 rows of x per workgroup. */
export function regblockKernel(pipeline: GPUComputePipeline): MatmulKernel {
  return gemmKernel(pipeline, 32, 32);
}

/** One row chunk of W with a bind group for each of the matmul's kernels (none where a kernel is absent). */
export interface BoundChunk {
  rows: number;
  groups: (GPUBindGroup | undefined)[];
}

/** Binds a chunk for each kernel; `bindings(kernel, i)` lists kernel i's bindings. */
export function bindChunk(
  ctx: GpuContext, label: string, rows: number, kernels: readonly (MatmulKernel | undefined)[],
  bindings: (kernel: MatmulKernel, i: number) => (Binding | undefined)[],
): BoundChunk {
  return { rows, groups: kernels.map((k, i) => (k ? bindGroup(ctx, k.pipeline, bindings(k, i), label) : undefined)) };
}

/** The usual bindings: the step block where the kernel takes it, then params, x, W, y, bias, AUX and W's scales. */
export function chunkBindings(ctx: GpuContext, step: StepParams, p: GPUBuffer, x: Binding, w: GPUBuffer, o: { y: GPUBuffer; bias?: GPUBuffer }, aux: Binding, scales?: GPUBuffer) {
  return (k: MatmulKernel): (Binding | undefined)[] => [k.usesStep ? step.buffer : undefined, p, x, w, o.y, o.bias ?? ctx.dummy, aux, scales];
}

/** Dispatches kernel `i` (`kernel`) over every chunk: one dispatch per chunk of W. */
export function dispatchChunks(pass: GPUComputePassEncoder, m: number, kernel: MatmulKernel, i: number, chunks: readonly BoundChunk[]): void {
  pass.setPipeline(kernel.pipeline);
  for (const c of chunks) {
    pass.setBindGroup(0, c.groups[i]!);
    pass.dispatchWorkgroups(...kernel.grid(c.rows, m));
  }
}

/** The encode of a matmul with a gemv (kernel 0) for m = 1 and, when m can exceed 1, a gemm (kernel 1). */
export function gemvOrGemm(gemv: MatmulKernel, gemm: MatmulKernel | undefined, chunks: readonly BoundChunk[]) {
  return (pass: GPUComputePassEncoder, m: number): void => {
    if (m > 1 && gemm) dispatchChunks(pass, m, gemm, 1, chunks);
    else dispatchChunks(pass, m, gemv, 0, chunks);
  };
}

/**
 * The front of an int8-activation matmul (W8A8 in matmul-q8.ts, W4A8 in matmul-q4a8.ts): scratch
 * of its own for xin quantised per group (`xqBytes` of values, `xsBytes` of scales), filled by
 * quantize_q8.wgsl (with `quantize`'s constants; the fused RMSNorm / SiLU·mul inputs included).
 * `op` makes the bound op that runs that pass, then the integer matmul's `encode`, and frees the
 * scratch and both ops' parameter blocks with itself.
 */
export function int8Front(
  ctx: GpuContext,
  o: {
    w: { label: string }; x: GPUBuffer; maxM: number; K: number; xStride: number; xOffset: number;
    inp: FusedInput; xqBytes: number; xsBytes: number; quantize: { GS: number; PAIRS?: number };
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
