/**
 * y[m][N] (+)= xin[m][K] · W[N][K]ᵀ (+ bias[N]), where xin is x, RMSNorm(x)·g (fused norm) or
 * silu(a)·b (fused SwiGLU): the one entry, which picks the kernels by the weights' dtype: f32
 * (`Matrix`, matmul-f32.ts), f16 (`HalfMatrix`, matmul-f16.ts), Q8_0 (matmul-q8.ts) and Q4_0
 * (`QuantMatrix`: matmul-q4.ts weight-only, matmul-q4a8.ts with int8 activations) and q8_m
 * (GGUF's Q4_1, Q5_x and K-quants: matmul-q8.ts's kernels, weight-only). A W split
 * across bindings runs one dispatch per chunk of its rows (matmul-base.ts).
 */
import { InvalidArgumentError } from '../../errors.js';
import type { GemmKind, GemvKind, SmallGemmKind, GpuContext } from '../core/device.js';
import type { Matrix, StepParams } from '../core/buffers.js';
import type { BoundOp } from '../core/op.js';
import { isQuantMatrix, type QuantMatrix } from '../core/quant-matrix.js';
import { isHalfMatrix, type HalfMatrix } from '../core/half-matrix.js';
import type { MatmulIo, Q8Activations } from './matmul-base.js';
import { createF32Matmul } from './matmul-f32.js';
import { createF16Matmul } from './matmul-f16.js';
import { createQ8Matmul } from './matmul-q8.js';
import { createQ4Matmul } from './matmul-q4.js';
import { createQ4A8Matmul } from './matmul-q4a8.js';

export interface MatmulOptions extends MatmulIo {
  w: Matrix | QuantMatrix | HalfMatrix;
  /**
   * Quantised weights: keep x in f32 (default) or quantise it to int8 per group first: W8A8
   * for Q8_0 (runq.c), W4A8 for Q4_0 (llama.cpp's CPU Q4_0 × Q8_0). f32 and f16 weights ignore it.
   */
  activations?: Q8Activations;
  /**
   * W8A8 Q8_0 only: each output's sum over groups starts from y's value and adds the groups in
   * order, carrying on a sum another rank began over the earlier columns (runq.c's order).
   */
  continueSum?: boolean;
  /** f32 weights: override the adapter's choice (tests, benchmarks). */
  gemv?: GemvKind;
  gemm?: GemmKind;
  /** f32 weights: override the 2 ≤ m ≤ 8 choice; with `gemm` given and this not, such m run that gemm. */
  small?: SmallGemmKind;
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
  // q8_m weights take f32 activations in an int8 run, like f16 ones.
  if (isQuantMatrix(w) && w.kind === 'q8_m') {
    if (o.continueSum) throw new InvalidArgumentError(`matmul ${w.label}: continueSum needs Q8_0 weights with int8 activations`);
    return createQ8Matmul(ctx, step, { ...o, w, activations: 'f32' });
  }
  if (isQuantMatrix(w)) return createQ8Matmul(ctx, step, { ...o, w, activations: o.activations ?? 'f32' });
  if (o.continueSum) throw new InvalidArgumentError(`matmul ${w.label}: continueSum needs Q8_0 weights with int8 activations`);
  return createF32Matmul(ctx, step, { ...o, w });
}
