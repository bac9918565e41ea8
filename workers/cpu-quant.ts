/**
 * What the CPU backend needs for quantised weights (src/cpu/quant.ts, src/cpu/kquant.ts): GGUF
 * Q8_0, Q4_0 and q8_m (Q4_1, Q5_x, K-quants) matrices tiled into the rank's memory, one matmul
 * entry point that sends each matrix to its kernel (f32 and f16 to the dense matmul it is given:
 * on a rank, gemm.ts `matmulFor`'s panel matmul and GEMM; quantised ones weight-only, or with the
 * input quantised to int8 first when the rank runs int8 activations), and the embedding for any
 * kind of table.
 */
import { CpuKernels, type CpuWeightDtype, type CpuWeightLayout, type MatmulArgs } from '../src/cpu/kernels.js';
import { CpuQuantKernels, QUANT_GROUP, type CpuQuantDtype } from '../src/cpu/quant.js';
import { CpuQuantGemm, QGEMM_MIN_ROWS, qgemmMinRows } from '../src/cpu/qgemm.js';
import { CpuKQuantKernels, type KqSegment } from '../src/cpu/kquant.js';
import { ModelFormatError } from '../src/errors.js';
import type { SliceView } from './slice-views.js';

/**
 * A matrix in the rank's memory: (rows, cols) W[out][in], f32/f16 (`rows`, or in panels by
 * writePanels), Q8_0/Q4_0 (tiled by CpuQuantKernels.tile, or in `rows`: the values plane
 * at `at`, the scales at `scales`) or q8_m (tiled `segments` of rows, each in its own form; or in
 * `rows`: codes at `at`, (scale, min) pairs at `scales` per `groupSize` values).
 */
export interface CpuMatrix {
  at: number;
  dtype: CpuWeightDtype | CpuQuantDtype | 'q8_m';
  layout: CpuWeightLayout;
  scales?: number;
  segments?: readonly KqSegment[];
  groupSize?: number;
}

const isQuant = (d: CpuMatrix['dtype']): d is CpuQuantDtype => d === 'q8_0' || d === 'q4_0';

/**
 * Quantised parts (one common form, as slice-views.ts `commonForm` gives them) of `cols` values a
 * row into the memory: tiled for a matmul, or in rows (values plane, then scales) for the embedding.
 */
export function quantMatrix(qk: CpuQuantKernels, kn: CpuKernels, parts: SliceView[], cols: number, layout: CpuWeightLayout, what: string): CpuMatrix {
  const quant = parts.map((p) => {
    if ((p.dtype !== 'q8_0' && p.dtype !== 'q4_0') || p.groupSize !== QUANT_GROUP) {
      throw new ModelFormatError(
        `${what} is ${p.dtype}${'groupSize' in p ? ` in groups of ${p.groupSize}` : ''}; CPU ranks take f32 or f16 weights, or Q8_0/Q4_0 in GGUF's groups of ${QUANT_GROUP}`,
        'Use GGUF Q8_0 or Q4_0 weights, or GPU ranks (devices: "gpu") for this model',
      );
    }
    return p;
  });
  const dtype = quant[0]!.dtype;
  if (layout === 'rows') {
    // The parts' planes lie back to back (alloc rounds to 16 bytes, which whole rows of groups fill).
    if (quant.some((p) => p.q.byteLength % 16 || p.s.byteLength % 16)) throw new ModelFormatError(`${what}: a ${dtype} table of ${cols} columns cannot lie in rows here`);
    const at = kn.mark();
    for (const p of quant) kn.put(p.q);
    const scales = kn.mark();
    for (const p of quant) kn.put(p.s);
    return { at, dtype, layout, scales };
  }
  const rows = quant.reduce((n, p) => n + (p.s.length * QUANT_GROUP) / cols, 0);
  const at = kn.alloc(CpuQuantKernels.tiledBytes(rows, cols, dtype));
  qk.tile(at, quant, cols, dtype);
  return { at, dtype, layout };
}

/** One matmul: y (m, n) = x (m, k; rows xStride apart) · wᵀ (+ bias), or y += it. */
export interface CpuMatmulArgs {
  y: number;
  x: number;
  xStride?: number;
  w: CpuMatrix;
  m: number;
  k: number;
  n: number;
  accumulate?: boolean;
  bias?: number;
}

export type CpuMatmul = (a: CpuMatmulArgs) => void;

/**
 * The matmul of a rank's state. With int8 activations each quantised matmul first quantises its
 * input rows (up to maxM rows of maxK values) into a scratch region allocated here; f32 and f16
 * matrices keep f32 activations, as on GPU ranks. `dtypes` are the kinds of matrix it will see
 * (default: every kind): scratch and kernels for the others are not made.
 */
export function cpuMatmul(
  kn: CpuKernels, qk: CpuQuantKernels, activations: 'f32' | 'int8', maxM: number, maxK: number,
  dense: (a: MatmulArgs) => void = (a) => kn.matmul(a), dtypes?: ReadonlySet<CpuMatrix['dtype']>,
): CpuMatmul {
  const has = (d: CpuMatrix['dtype']) => !dtypes || dtypes.has(d);
  const quantised = has('q8_0') || has('q4_0') || has('q8_m');
  const xa = activations === 'int8' && quantised ? kn.alloc(CpuQuantKernels.activationBytes(maxM, maxK)) : 0;
  // Prefill chunks and batches of many rows take the quantised GEMM (its scratch allocated here).
  const qg = maxM >= QGEMM_MIN_ROWS && (has('q8_0') || has('q4_0')) ? CpuQuantGemm.create(kn, maxM, maxK) : undefined;
  // q8_m's sums of 16 inputs (f32, or int8 once quantised): one pass per matmul, for every segment.
  const sums = has('q8_m') ? kn.alloc(CpuKQuantKernels.sumsBytes(maxM, maxK)) : 0;
  const kq = has('q8_m') ? CpuKQuantKernels.of(kn) : undefined;
  return (a) => {
    const { w } = a;
    if (w.dtype === 'q8_m') {
      if (activations === 'f32') kq!.sums16(sums, a.x, a.m, a.k, a.xStride ?? a.k);
      else {
        qk.quantize(xa, a.x, a.m, a.k, a.xStride ?? a.k, false);
        kq!.a8sums16(sums, xa, a.m, a.k);
      }
      let col = 0;
      for (const s of w.segments!) {
        const b = {
          y: a.y + col * 4, ys: a.n, w: s.at, form: s.form, m: a.m, k: a.k, n: s.rows,
          accumulate: a.accumulate, bias: a.bias === undefined ? undefined : a.bias + col * 4,
        };
        if (activations === 'f32') kq!.matmul({ ...b, x: a.x, xStride: a.xStride, xs16: sums });
        else kq!.matmulA8({ ...b, xa, xi16: sums });
        col += s.rows;
      }
      return;
    }
    if (!isQuant(w.dtype)) {
      dense({ ...a, w: w.at, dtype: w.dtype, layout: w.layout });
      return;
    }
    const q = { y: a.y, w: w.at, dtype: w.dtype, m: a.m, k: a.k, n: a.n, accumulate: a.accumulate, bias: a.bias };
    const mq = qg && a.m >= qgemmMinRows(qg, w.dtype, activations) ? qg : qk;
    if (activations === 'f32') {
      mq.matmul({ ...q, x: a.x, xStride: a.xStride });
      return;
    }
    qk.quantize(xa, a.x, a.m, a.k, a.xStride ?? a.k, mq === qk && w.dtype === 'q8_0');
    mq.matmulA8({ ...q, xa });
  };
}

/** y[r] = table[tokens[r]] (rows of dim), for a table of any dtype. */
export function cpuEmbed(kn: CpuKernels, qk: CpuQuantKernels, table: CpuMatrix, y: number, tokens: number, m: number, dim: number): void {
  if (isQuant(table.dtype)) qk.embed(y, table.at, table.scales!, tokens, m, dim, table.dtype);
  else if (table.dtype === 'q8_m') CpuKQuantKernels.of(kn).embed(y, table.at, table.scales!, tokens, m, dim, table.groupSize!);
  else kn.embed(y, table.at, tokens, m, dim, table.dtype);
}
