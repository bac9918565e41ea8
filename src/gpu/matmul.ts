/**
 * y[m][N] (+)= xin[m][K] · W[N][K]ᵀ (+ bias[N]), where xin is x, RMSNorm(x)·g (fused norm) or
 * silu(a)·b (fused SwiGLU). m = 1 runs a gemv, 2 ≤ m ≤ 8 (a decode batch) the small-m kernel,
 * m > 8 a register-blocked or tiled gemm (the adapter's measured choices, `ctx.choices`). A W
 * split across bindings runs one dispatch per chunk of its rows. Quantised weights
 * (`QuantMatrix`) go to matmul-q8.ts (Q8_0) and matmul-q4.ts (Q4_0), f16 ones (`HalfMatrix`) to
 * f16.ts.
 */
import commonSrc from '../../shaders/common.wgsl?raw';
import matmulCommonSrc from '../../shaders/matmul_common.wgsl?raw';
import xF32Src from '../../shaders/matmul_x_f32.wgsl?raw';
import xVec4Src from '../../shaders/matmul_x_vec4.wgsl?raw';
import gemvSrc from '../../shaders/matmul_gemv.wgsl?raw';
import gemvSgSrc from '../../shaders/matmul_gemv_sg.wgsl?raw';
import regblockSrc from '../../shaders/matmul_regblock.wgsl?raw';
import wF32Src from '../../shaders/matmul_w_f32.wgsl?raw';
import tiledSrc from '../../shaders/matmul_tiled.wgsl?raw';
import seqSrc from '../../shaders/matmul_seq.wgsl?raw';
import bcastSrc from '../../shaders/matmul_bcast.wgsl?raw';
import bcast32Src from '../../shaders/matmul_bcast32.wgsl?raw';
import prepSrc from '../../shaders/matmul_prep.wgsl?raw';
import { InvalidArgumentError } from '../errors.js';
import type { GemmKind, GemvKind, GpuContext, SmallGemmKind } from './device.js';
import type { Matrix, StepParams } from './buffers.js';
import { createParamBlock, createStorageBuffer } from './buffers.js';
import { grid2d, wgsl } from './layout.js';
import { bindGroup, makeOp, type Binding, type BoundOp } from './op.js';
import { isQuantMatrix, type QuantMatrix } from './q8.js';
import { createQ8Matmul, matmulIo, type Q8Activations } from './matmul-q8.js';
import { createQ4Matmul } from './matmul-q4.js';
import { createF16Matmul, isHalfMatrix, type HalfMatrix } from './f16.js';
import { createQ4A8Matmul } from './matmul-q4a8.js';

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

export interface MatmulOptions {
  /** x (maxM, xStride) f32; row r starts at float xOffset + r·xStride. */
  x: GPUBuffer;
  xStride?: number;
  xOffset?: number;
  w: Matrix | QuantMatrix | HalfMatrix;
  /**
   * Quantised weights: keep x in f32 (default) or quantise it to int8 per group first: W8A8
   * for Q8_0 (runq.c), W4A8 for Q4_0 (llama.cpp's CPU Q4_0 × Q8_0). f32 and f16 weights ignore it.
   */
  activations?: Q8Activations;
  /** y (maxM, yStride) f32; defaults yStride = N. */
  y: GPUBuffer;
  yStride?: number;
  /** bias (N) f32, added to every row. */
  bias?: GPUBuffer;
  /** y += result instead of y = result (fuses a residual add). */
  accumulate?: boolean;
  /**
   * W8A8 Q8_0 only: each output's sum over groups starts from y's value and adds the groups in
   * order, carrying on a sum another rank began over the earlier columns (runq.c's order).
   */
  continueSum?: boolean;
  input?: MatmulInput;
  maxM: number;
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

function modeOf(input: MatmulInput | undefined): number {
  if (!input || input.kind === 'plain') return 0;
  return input.kind === 'rmsnorm' ? 1 : 2;
}

interface Variant {
  pipeline: GPUComputePipeline;
  /** Workgroups for one chunk of `rows` rows of W and m rows of x. */
  grid(rows: number, m: number): [number, number, number];
}

const SEQ_WG = 64;

/** The variants this adapter can run (subgroup ones need the feature and a fixed subgroup size). */
export function availableGemv(ctx: GpuContext): GemvKind[] {
  const f = ctx.features;
  const out: GemvKind[] = ['tree'];
  if (f.subgroups && f.subgroupMinSize >= 4 && f.subgroupMinSize <= 128) out.push('subgroup', 'subgroup8');
  if (f.subgroups && f.subgroupId && f.subgroupMinSize >= 4 && f.subgroupMinSize === f.subgroupMaxSize && SEQ_WG % (4 * f.subgroupMinSize) === 0) out.push('sequential');
  return out;
}

export function availableGemm(ctx: GpuContext): GemmKind[] {
  const f = ctx.features;
  const out: GemmKind[] = ['regblock', 'tiled'];
  if (availableGemv(ctx).includes('sequential')) out.push('sequential');
  // gemm_bcast broadcasts from lanes 0..3 of a 4-invocation workgroup: subgroups of exactly 4.
  if (f.subgroups && f.subgroupMinSize === 4 && f.subgroupMaxSize === 4) out.push('broadcast', 'broadcast16');
  return out;
}

/** The small-m variants this adapter can run ('gemm' always: the m > 1 choice). */
export function availableSmall(ctx: GpuContext): SmallGemmKind[] {
  // The broadcast kernels' workgroup is one 4-lane subgroup (as availableGemm's).
  return availableGemm(ctx).includes('broadcast') ? ['gemm', 'broadcast', 'broadcast32', 'prep32'] : ['gemm'];
}

function gemvVariant(ctx: GpuContext, kind: GemvKind, constants: Record<string, number>, xSrc: string): Variant {
  if (kind === 'sequential') {
    const code = wgsl(seqSrc, commonSrc, matmulCommonSrc, xSrc);
    const pipeline = ctx.pipelines.get(code, 'gemv_seq', { ...constants, WG: SEQ_WG }, 'gemv_seq');
    const rowsPerWg = (SEQ_WG / ctx.features.subgroupMinSize) * 4;
    return { pipeline, grid: (rows) => [...grid2d(Math.ceil(rows / rowsPerWg)), 1] };
  }
  if (kind === 'subgroup' || kind === 'subgroup8') {
    const wg = ctx.features.subgroupMinSize;
    const rowsPerGroup = kind === 'subgroup8' ? 8 : 4;
    const entry = kind === 'subgroup8' ? 'gemv_sg8' : 'gemv_sg';
    const code = wgsl(gemvSgSrc, commonSrc, matmulCommonSrc, xSrc);
    const pipeline = ctx.pipelines.get(code, entry, { ...constants, WG: wg, RPW: GEMV_SG_RPW }, entry);
    return { pipeline, grid: (rows) => [...grid2d(Math.ceil(rows / rowsPerGroup / GEMV_SG_RPW)), 1] };
  }
  const code = wgsl(commonSrc, matmulCommonSrc, xSrc, gemvSrc);
  const pipeline = ctx.pipelines.get(code, 'gemv_wg', { ...constants, WG: GEMV_WG }, 'gemv_wg');
  return { pipeline, grid: (rows) => [...grid2d(Math.ceil(rows / 4)), 1] };
}

function gemmVariant(ctx: GpuContext, kind: GemmKind, constants: Record<string, number>, xSrc: string): Variant {
  if (kind === 'sequential') {
    const code = wgsl(seqSrc, commonSrc, matmulCommonSrc, xSrc);
    const pipeline = ctx.pipelines.get(code, 'gemm_seq', { ...constants, WG: SEQ_WG }, 'gemm_seq');
    const rowsPerWg = (SEQ_WG / (4 * ctx.features.subgroupMinSize)) * 4;
    return {
      pipeline,
      grid: (rows, m) => {
        const [x, z] = grid2d(Math.ceil(rows / 16));
        return [x, Math.ceil(m / rowsPerWg), z];
      },
    };
  }
  if (kind === 'broadcast' || kind === 'broadcast16') {
    const rm = kind === 'broadcast16' ? 16 : 8;
    const entry = kind === 'broadcast16' ? 'gemm_bcast16' : 'gemm_bcast';
    const code = wgsl(bcastSrc, commonSrc, matmulCommonSrc, xSrc);
    const pipeline = ctx.pipelines.get(code, entry, constants, entry);
    return {
      pipeline,
      grid: (rows, m) => {
        const [x, z] = grid2d(Math.ceil(rows / 16));
        return [x, Math.ceil(m / rm), z];
      },
    };
  }
  if (kind === 'regblock') {
    const code = wgsl(commonSrc, matmulCommonSrc, xSrc, wF32Src, regblockSrc);
    const pipeline = ctx.pipelines.get(code, 'gemm_regblock', { ...constants, WGX: 8, WGY: 8 }, 'gemm_regblock');
    return {
      pipeline,
      grid: (rows, m) => {
        const [x, z] = grid2d(Math.ceil(rows / 32));
        return [x, Math.ceil(m / 32), z];
      },
    };
  }
  const code = wgsl(commonSrc, matmulCommonSrc, xSrc, tiledSrc);
  const pipeline = ctx.pipelines.get(code, 'gemm_tiled', constants, 'gemm_tiled');
  return {
    pipeline,
    grid: (rows, m) => {
      const [x, z] = grid2d(Math.ceil(rows / 32));
      return [x, Math.ceil(m / 32), z];
    },
  };
}

function bcast32Variant(ctx: GpuContext, constants: Record<string, number>, xSrc: string): Variant {
  const code = wgsl(bcast32Src, commonSrc, matmulCommonSrc, xSrc);
  const pipeline = ctx.pipelines.get(code, 'gemm_bcast32', constants, 'gemm_bcast32');
  return {
    pipeline,
    grid: (rows, m) => {
      const [x, z] = grid2d(Math.ceil(rows / 32));
      return [x, Math.ceil(m / SMALL_M), z];
    },
  };
}

export function createMatmul(ctx: GpuContext, step: StepParams, o: MatmulOptions): BoundOp {
  const w = o.w;
  if (isHalfMatrix(w)) {
    // Like f32 weights, f16 ones take f32 activations in an int8 run (a GGUF's F16 matrices
    // beside its Q8_0/Q4_0 ones, as llama.cpp does).
    if (o.continueSum) throw new InvalidArgumentError(`matmul ${w.label}: continueSum needs Q8_0 weights with int8 activations`);
    return createF16Matmul(ctx, step, { ...o, w });
  }
  if (isQuantMatrix(w) && w.kind === 'q4_0') {
    return o.activations === 'int8' ? createQ4A8Matmul(ctx, step, { ...o, w }) : createQ4Matmul(ctx, step, { ...o, w });
  }
  if (isQuantMatrix(w)) return createQ8Matmul(ctx, step, { ...o, w, activations: o.activations ?? 'f32' });
  if (o.continueSum) throw new InvalidArgumentError(`matmul ${w.label}: continueSum needs Q8_0 weights with int8 activations`);
  const { maxM } = o;
  const { K, xStride, xOffset, yStride } = matmulIo(step, o);
  const mode = modeOf(o.input);

  let aux: Binding = ctx.dummy;
  let bStride = 0;
  let bOff = 0;
  let eps = 0;
  if (o.input?.kind === 'rmsnorm') {
    aux = o.input.weight;
    eps = o.input.eps;
  } else if (o.input?.kind === 'siluMul') {
    aux = o.input.b;
    bStride = o.input.bStride ?? xStride;
    bOff = o.input.bOffset ?? 0;
  }
  // Whole vec4 loads of x (and AUX) when every row of them starts on a vec4.
  const aligned4 = (...v: number[]) => v.every((q) => q % 4 === 0);
  const xSrc = aligned4(K, xStride, xOffset) && (mode !== 2 || aligned4(bStride, bOff)) ? xVec4Src : xF32Src;
  const constants = { MODE: mode, HAS_BIAS: o.bias ? 1 : 0, ACCUMULATE: o.accumulate ? 1 : 0, ALIGNED: K % 4 === 0 ? 1 : 0 };
  const gemvKind = o.gemv ?? ctx.choices.gemv;
  const gemmKind = o.gemm ?? ctx.choices.gemm;
  const smallKind = o.small ?? (o.gemm === undefined ? ctx.choices.small : 'gemm');
  if (!availableGemv(ctx).includes(gemvKind)) throw new InvalidArgumentError(`gemv variant ${gemvKind} is not available on this adapter`);
  if (!availableGemm(ctx).includes(gemmKind)) throw new InvalidArgumentError(`gemm variant ${gemmKind} is not available on this adapter`);
  if (!availableSmall(ctx).includes(smallKind)) throw new InvalidArgumentError(`small-m matmul variant ${smallKind} is not available on this adapter`);
  // The sequential variants read single floats, which a vec4-typed X would turn into vec4 loads.
  const gemv = gemvVariant(ctx, gemvKind, constants, gemvKind === 'sequential' ? xF32Src : xSrc);
  const gemm = maxM > 1 ? gemmVariant(ctx, gemmKind, constants, gemmKind === 'sequential' ? xF32Src : xSrc) : undefined;
  // A decode batch (m ≤ 8) in a kernel of 8-row blocks: broadcast16 computes 16 rows per
  // workgroup whatever m is (half of them wasted), regblock 32.
  const usePrep = smallKind === 'prep32' && mode !== 0;
  let small: Variant | undefined;
  if (gemm && smallKind !== 'gemm') {
    if (smallKind === 'broadcast') small = gemmVariant(ctx, 'broadcast', constants, xSrc);
    else if (!usePrep) small = bcast32Variant(ctx, { ...constants, ROW_SCALE: 0 }, xSrc);
    // On the prepared rows: plain x (vec4 loads when K allows) and, for RMSNorm, a scale per row.
    else small = bcast32Variant(ctx, { ...constants, MODE: 0, ROW_SCALE: mode === 1 ? 1 : 0 }, aligned4(K) ? xVec4Src : xF32Src);
  }
  // The prepared input: up to 8 rows of K floats, then a scale per row; whole vec4s, as the
  // kernel's vec4 view of it ends at the last whole one.
  const smallRows = Math.min(maxM, SMALL_M);
  const prep = small && usePrep ? (() => {
    const scratch = createStorageBuffer(ctx, Math.ceil((smallRows * K + smallRows) / 4) * 16, `matmul ${w.label} prep`);
    const pipeline = ctx.pipelines.get(wgsl(prepSrc, commonSrc, matmulCommonSrc, xF32Src), 'matmul_prep', constants, 'matmul_prep');
    const p = createParamBlock(ctx, [K, smallRows * K, 0, 0, K, xStride, xOffset, bStride, bOff, eps, 0, 0], [9], `matmul ${w.label} prep`);
    const bg = bindGroup(ctx, pipeline, [step.buffer, p, o.x, undefined, scratch, undefined, aux], `${w.label} prep`);
    return { scratch, pipeline, p, bg };
  })() : undefined;


  const params: GPUBuffer[] = prep ? [prep.p] : [];
  const chunks = w.chunks.map((c) => {
    const p = createParamBlock(ctx, [K, c.rows, w.stride / 4, c.rowStart, yStride, xStride, xOffset, bStride, bOff, eps, 0, 0], [9], `matmul ${w.label}`);
    params.push(p);
    // The gemv is always m = 1, so it has no use for (and no binding of) the step block.
    const entries = (pl: GPUComputePipeline, usesStep: boolean) =>
      bindGroup(ctx, pl, [usesStep ? step.buffer : undefined, p, o.x, c.buffer, o.y, o.bias ?? ctx.dummy, aux], w.label);
    let smallBg: GPUBindGroup | undefined;
    if (small && prep) {
      const q = createParamBlock(ctx, [K, c.rows, w.stride / 4, c.rowStart, yStride, K, 0, 0, smallRows * K, eps, 0, 0], [9], `matmul ${w.label}`);
      params.push(q);
      smallBg = bindGroup(ctx, small.pipeline, [step.buffer, q, prep.scratch, c.buffer, o.y, o.bias ?? ctx.dummy, prep.scratch], w.label);
    } else if (small) smallBg = entries(small.pipeline, true);
    return {
      rows: c.rows,
      gemvBg: entries(gemv.pipeline, false),
      gemmBg: gemm ? entries(gemm.pipeline, true) : undefined,
      smallBg,
    };
  });

  const op = makeOp(ctx, `matmul ${w.label}`, maxM, params, (pass, m) => {
    const which = m === 1 || !gemm ? 'gemvBg' : small && m <= SMALL_M ? 'smallBg' : 'gemmBg';
    const v = which === 'gemvBg' ? gemv : which === 'smallBg' ? small! : gemm!;
    if (which === 'smallBg' && prep) {
      pass.setPipeline(prep.pipeline);
      pass.setBindGroup(0, prep.bg);
      pass.dispatchWorkgroups(m);
    }
    pass.setPipeline(v.pipeline);
    for (const c of chunks) {
      pass.setBindGroup(0, c[which]!);
      const [x, y, z] = v.grid(c.rows, m);
      pass.dispatchWorkgroups(x, y, z);
    }
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
