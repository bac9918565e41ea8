/**
 * Matmuls with f32 weights (`Matrix`). m = 1 runs a gemv, 2 ≤ m ≤ 8 (a decode batch) the small-m
 * kernel, m > 8 a register-blocked, tiled or subgroup-broadcast gemm: the adapter's measured
 * choices (`ctx.choices`, ../tune.ts) unless the options name one. The m > 8 gemm is compiled
 * at its first use.
 */
import commonSrc from '../../../shaders/common.wgsl?raw';
import matmulCommonSrc from '../../../shaders/matmul_common.wgsl?raw';
import gemvSrc from '../../../shaders/matmul_gemv.wgsl?raw';
import gemvSgSrc from '../../../shaders/matmul_gemv_sg.wgsl?raw';
import regblockSrc from '../../../shaders/matmul_regblock.wgsl?raw';
import wF32Src from '../../../shaders/matmul_w_f32.wgsl?raw';
import tiledSrc from '../../../shaders/matmul_tiled.wgsl?raw';
import bcastSrc from '../../../shaders/matmul_bcast.wgsl?raw';
import bcast32Src from '../../../shaders/matmul_bcast32.wgsl?raw';
import prepSrc from '../../../shaders/matmul_prep.wgsl?raw';
import { InvalidArgumentError } from '../../errors.js';
import type { GemmKind, GemvKind, GpuContext, SmallGemmKind } from '../core/device.js';
import { createParamBlock, createStorageBuffer, type Matrix, type StepParams } from '../core/buffers.js';
import { wgsl } from '../core/layout.js';
import { bindGroup, makeOp, type BoundOp } from '../core/op.js';
import {
  bindChunk, chunkBindings, chunkParams, dispatchChunks, fusedInput, gemmKernel, gemvKernel, matmulIo, regblockKernel, vec4Rows, xLoads,
  type MatmulIo, type MatmulKernel,
} from './matmul-base.js';

export interface F32MatmulOptions extends MatmulIo {
  w: Matrix;
  /** Override the adapter's choice (tests, benchmarks). */
  gemv?: GemvKind;
  gemm?: GemmKind;
  /** Override the 2 ≤ m ≤ 8 choice; with `gemm` given and this not, such m run that gemm. */
  small?: SmallGemmKind;
}

/** Rows of x a small-m kernel covers: a decode batch up to this size takes it. */
export const SMALL_M = 8;

const GEMV_WG = 64;
const GEMV_SG_RPW = 4;

/** The variants this adapter can run (subgroup ones need the feature and a fixed subgroup size). */
export function availableGemv(ctx: GpuContext): GemvKind[] {
  const f = ctx.features;
  const out: GemvKind[] = ['tree'];
  if (f.subgroups && f.subgroupMinSize >= 4 && f.subgroupMinSize <= 128) out.push('subgroup');
  return out;
}

export function availableGemm(ctx: GpuContext): GemmKind[] {
  const f = ctx.features;
  const out: GemmKind[] = ['regblock', 'tiled'];
  // gemm_bcast broadcasts from lanes 0..3 of a 4-invocation workgroup: subgroups of exactly 4.
  if (f.subgroups && f.subgroupMinSize === 4 && f.subgroupMaxSize === 4) out.push('broadcast', 'broadcast16');
  return out;
}

/** The small-m variants this adapter can run ('gemm' always: the m > 1 choice). */
export function availableSmall(ctx: GpuContext): SmallGemmKind[] {
  // The broadcast kernels' workgroup is one 4-lane subgroup (as availableGemm's).
  return availableGemm(ctx).includes('broadcast') ? ['gemm', 'broadcast', 'broadcast32', 'prep32'] : ['gemm'];
}

function gemvVariant(ctx: GpuContext, kind: GemvKind, constants: Record<string, number>, xSrc: string): MatmulKernel {
  if (kind === 'subgroup') {
    const code = wgsl(gemvSgSrc, commonSrc, matmulCommonSrc, xSrc);
    const pipeline = ctx.pipelines.get(code, 'gemv_sg', { ...constants, WG: ctx.features.subgroupMinSize, RPW: GEMV_SG_RPW }, 'gemv_sg');
    return gemvKernel(pipeline, 4 * GEMV_SG_RPW);
  }
  const code = wgsl(commonSrc, matmulCommonSrc, xSrc, gemvSrc);
  const pipeline = ctx.pipelines.get(code, 'gemv_wg', { ...constants, WG: GEMV_WG }, 'gemv_wg');
  return gemvKernel(pipeline, 4);
}

function gemmVariant(ctx: GpuContext, kind: GemmKind, constants: Record<string, number>, xSrc: string): MatmulKernel {
  if (kind === 'broadcast' || kind === 'broadcast16') {
    const entry = kind === 'broadcast16' ? 'gemm_bcast16' : 'gemm_bcast';
    const pipeline = ctx.pipelines.get(wgsl(bcastSrc, commonSrc, matmulCommonSrc, xSrc), entry, constants, entry);
    return gemmKernel(pipeline, 16, kind === 'broadcast16' ? 16 : 8);
  }
  if (kind === 'regblock') {
    const code = wgsl(commonSrc, matmulCommonSrc, xSrc, wF32Src, regblockSrc);
    return regblockKernel(ctx.pipelines.get(code, 'gemm_regblock', { ...constants, WGX: 8, WGY: 8 }, 'gemm_regblock'));
  }
  return gemmKernel(ctx.pipelines.get(wgsl(commonSrc, matmulCommonSrc, xSrc, tiledSrc), 'gemm_tiled', constants, 'gemm_tiled'), 32, 32);
}

function bcast32Variant(ctx: GpuContext, constants: Record<string, number>, xSrc: string): MatmulKernel {
  const pipeline = ctx.pipelines.get(wgsl(bcast32Src, commonSrc, matmulCommonSrc, xSrc), 'gemm_bcast32', constants, 'gemm_bcast32');
  return gemmKernel(pipeline, 32, SMALL_M);
}

const GEMV = 0;
const GEMM = 1;
const SMALL = 2;

export function createF32Matmul(ctx: GpuContext, step: StepParams, o: F32MatmulOptions): BoundOp {
  const { w, maxM } = o;
  const { K, xStride, xOffset, yStride } = matmulIo(step, o);
  const inp = fusedInput(ctx, o.input, xStride);
  const xSrc = xLoads(vec4Rows(K, xStride, xOffset, inp));
  const constants = { MODE: inp.mode, HAS_BIAS: o.bias ? 1 : 0, ACCUMULATE: o.accumulate ? 1 : 0, ALIGNED: K % 4 === 0 ? 1 : 0 };
  const gemvKind = o.gemv ?? ctx.choices.gemv;
  const gemmKind = o.gemm ?? ctx.choices.gemm;
  const smallKind = o.small ?? (o.gemm === undefined ? ctx.choices.small : 'gemm');
  if (!availableGemv(ctx).includes(gemvKind)) throw new InvalidArgumentError(`gemv variant ${gemvKind} is not available on this adapter`);
  if (!availableGemm(ctx).includes(gemmKind)) throw new InvalidArgumentError(`gemm variant ${gemmKind} is not available on this adapter`);
  if (!availableSmall(ctx).includes(smallKind)) throw new InvalidArgumentError(`small-m matmul variant ${smallKind} is not available on this adapter`);
  const gemv = gemvVariant(ctx, gemvKind, constants, xSrc);
  // A decode batch (m ≤ 8) in a kernel of 8-row blocks: broadcast16 computes 16 rows per
  // workgroup whatever m is (half of them wasted), regblock 32.
  const usePrep = smallKind === 'prep32' && inp.mode !== 0;
  let small: MatmulKernel | undefined;
  if (maxM > 1 && smallKind !== 'gemm') {
    if (smallKind === 'broadcast') small = gemmVariant(ctx, 'broadcast', constants, xSrc);
    else if (!usePrep) small = bcast32Variant(ctx, { ...constants, ROW_SCALE: 0 }, xSrc);
    // On the prepared rows: plain x (vec4 loads when K allows) and, for RMSNorm, a scale per row.
    else small = bcast32Variant(ctx, { ...constants, MODE: 0, ROW_SCALE: inp.mode === 1 ? 1 : 0 }, xLoads(K % 4 === 0));
  }
  // The prepared input: up to 8 rows of K floats, then a scale per row; whole vec4s, as the
  // kernel's vec4 view of it ends at the last whole one.
  const smallRows = Math.min(maxM, SMALL_M);
  const prep = small && usePrep ? (() => {
    const scratch = createStorageBuffer(ctx, Math.ceil((smallRows * K + smallRows) / 4) * 16, `matmul ${w.label} prep`);
    const pipeline = ctx.pipelines.get(wgsl(prepSrc, commonSrc, matmulCommonSrc, xLoads(false)), 'matmul_prep', constants, 'matmul_prep');
    const p = createParamBlock(ctx, [K, smallRows * K, 0, 0, K, xStride, xOffset, inp.bStride, inp.bOff, inp.eps, 0, 0], [9], `matmul ${w.label} prep`);
    const bg = bindGroup(ctx, pipeline, [step.buffer, p, o.x, undefined, scratch, undefined, inp.aux], `${w.label} prep`);
    return { scratch, pipeline, p, bg };
  })() : undefined;

  const params: GPUBuffer[] = prep ? [prep.p] : [];
  const bindings = w.chunks.map((c) => {
    const geometry = { K, rows: c.rows, kStride4: w.stride / 4, rowStart: c.rowStart, yStride };
    const p = chunkParams(ctx, w.label, geometry, { xStride, xOffset, inp });
    params.push(p);
    const plain = chunkBindings(ctx, step, p, o.x, c.buffer, o, inp.aux);
    if (!prep) return plain;
    // The small kernel reads the prepared rows: dense, from 0, with their scales after them.
    const q = chunkParams(ctx, w.label, geometry, { xStride: K, xOffset: 0, inp: { bStride: 0, bOff: smallRows * K, eps: inp.eps } });
    params.push(q);
    const prepared = chunkBindings(ctx, step, q, prep.scratch, c.buffer, o, prep.scratch);
    return (k: MatmulKernel, i: number) => (i === SMALL ? prepared(k) : plain(k));
  });
  const chunks = w.chunks.map((c, j) => bindChunk(ctx, w.label, c.rows, [gemv, undefined, small], bindings[j]!));
  // The gemm is compiled and bound at the first step that runs it: most engines (decode, short
  // prompts) never do, and a pipeline costs tens of ms of the GPU process on a CPU adapter.
  let gemm: MatmulKernel | undefined;
  const lazyGemm = (): MatmulKernel => {
    if (gemm) return gemm;
    const k = gemmVariant(ctx, gemmKind, constants, xSrc);
    chunks.forEach((c, j) => (c.groups[GEMM] = bindGroup(ctx, k.pipeline, bindings[j]!(k, GEMM), w.label)));
    return (gemm = k);
  };

  const op = makeOp(ctx, `matmul ${w.label}`, maxM, params, (pass, m) => {
    if (m === 1) return dispatchChunks(pass, m, gemv, GEMV, chunks);
    if (!small || m > SMALL_M) return dispatchChunks(pass, m, lazyGemm(), GEMM, chunks);
    if (prep) {
      pass.setPipeline(prep.pipeline);
      pass.setBindGroup(0, prep.bg);
      pass.dispatchWorkgroups(m);
    }
    dispatchChunks(pass, m, small, SMALL, chunks);
  });
  if (!prep) return op;
  return {
    ...op,
    destroy() {
      op.destroy();
      prep.scratch.destroy();
    },
  };
}
