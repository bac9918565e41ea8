import { describe, expect, it } from 'vitest';
import { CpuKernels } from '../src/cpu/kernels.js';
import { CpuQuantKernels } from '../src/cpu/quant.js';
import { CpuQuantGemm, qgemmMinRows } from '../src/cpu/qgemm.js';
import { quantizeQ4 } from '../src/model/reference-q4.js';
import { quantizeQ8 } from '../src/model/reference-q8.js';
import { mulberry32 } from '../src/model/mulberry32.js';
import { cpuMatmul, quantMatrix } from './cpu-quant.js';
import type { SliceView } from './slice-views.js';

const rand = mulberry32(5);
const values = (n: number) => Float32Array.from({ length: n }, () => 2 * rand() - 1);

describe('cpuMatmul\'s quantised branch', () => {
  it.each((['f32', 'int8'] as const).flatMap((a) => (['q8_0', 'q4_0'] as const).map((d) => [a, d] as const)))(
    'takes the small-m kernel below qgemmMinRows rows and the quantised GEMM from it (%s activations, %s)', (activations, dtype) => {
    const [k, n] = [96, 11];
    const maxM = 16;
    const kn = CpuKernels.create();
    const qk = CpuQuantKernels.create(kn);
    const view: SliceView = dtype === 'q8_0'
      ? { dtype, ...quantizeQ8(values(n * k), n * k, 32), groupSize: 32 }
      : { dtype, ...quantizeQ4(values(n * k), n * k), groupSize: 32 };
    const w = quantMatrix(qk, kn, [view], k, 'tiled', 'w');
    const matmul = cpuMatmul(kn, qk, activations, maxM, k);
    const g = CpuQuantGemm.create(kn, maxM, k);
    const xa = kn.alloc(CpuQuantKernels.activationBytes(maxM, k));
    const from = qgemmMinRows(g, dtype, activations);
    for (const m of [from - 1, from, maxM]) {
      const x = kn.alloc(m * k * 4);
      kn.f32(x, m * k).set(values(m * k));
      const [y, small, gemm] = [kn.alloc(m * n * 4), kn.alloc(m * n * 4), kn.alloc(m * n * 4)];
      matmul({ y, x, w, m, k, n });
      const a = { w: w.at, dtype, m, k, n };
      if (activations === 'f32') {
        qk.matmul({ ...a, y: small, x });
        g.matmul({ ...a, y: gemm, x });
      } else {
        qk.quantize(xa, x, m, k);
        qk.matmulA8({ ...a, y: small, xa });
        g.matmulA8({ ...a, y: gemm, xa });
      }
      const want = m >= from ? gemm : small;
      expect(Array.from(kn.f32(y, m * n)), `m ${m}`).toEqual(Array.from(kn.f32(want, m * n)));
      // Weight-only, the two kernels round differently: the routing shows.
      if (activations === 'f32') expect(Array.from(kn.f32(small, m * n))).not.toEqual(Array.from(kn.f32(gemm, m * n)));
    }
  });
});
