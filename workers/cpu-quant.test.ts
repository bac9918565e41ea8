import { describe, expect, it } from 'vitest';
import { CpuKernels } from '../src/cpu/kernels.js';
import { CpuQuantKernels } from '../src/cpu/quant.js';
import { ModelFormatError } from '../src/errors.js';
import { matmulQ8, quantizeQ8 } from '../src/model/reference-q8.js';
import * as ref from '../src/model/reference.js';
import { mulberry32 } from '../src/model/mulberry32.js';
import { cpuMatmul, quantMatrix } from './cpu-quant.js';
import type { SliceView } from './slice-views.js';

const rand = mulberry32(3);
const values = (n: number) => Float32Array.from({ length: n }, () => 2 * rand() - 1);

describe('quantised matrices on a CPU rank', () => {
  it('refuses groups other than GGUF\'s 32, naming what it takes', () => {
    const kn = CpuKernels.create();
    const v: SliceView = { dtype: 'q8_0', ...quantizeQ8(values(64), 64, 4), groupSize: 4 };
    expect(() => quantMatrix(CpuQuantKernels.create(kn), kn, [v], 16, 'tiled', 'rank 0: layers.0.attention.wq')).toThrow(ModelFormatError);
    expect(() => quantMatrix(CpuQuantKernels.create(kn), kn, [v], 16, 'tiled', 'rank 0: layers.0.attention.wq'))
      .toThrow(/layers\.0\.attention\.wq is q8_0 in groups of 4; CPU ranks take f32 or f16 weights, or Q8_0\/Q4_0 in GGUF's groups of 32/);
  });

  it('the matmul sends a Q8_0 matrix to int8 activations or f32 ones, as the state runs, and an f32 matrix to f32', () => {
    const [m, k, n] = [2, 64, 5];
    const kn = CpuKernels.create();
    const qk = CpuQuantKernels.create(kn);
    const wq = quantizeQ8(values(n * k), n * k, 32);
    const x = values(m * k);
    const xp = kn.alloc(m * k * 4);
    kn.f32(xp, m * k).set(x);
    const y = kn.alloc(m * n * 4);
    const w = quantMatrix(qk, kn, [{ dtype: 'q8_0', ...wq, groupSize: 32 }], k, 'tiled', 'w');
    const want = new Float32Array(m * n);
    for (let r = 0; r < m; r++) matmulQ8(want.subarray(r * n, (r + 1) * n), quantizeQ8(x.subarray(r * k, (r + 1) * k), k, 32), wq, k, n, 32);
    cpuMatmul(kn, qk, 'int8', m, k)({ y, x: xp, w, m, k, n });
    expect(Array.from(kn.f32(y, m * n))).toEqual(Array.from(want));
    // Weight-only is not the int8 sum.
    cpuMatmul(kn, qk, 'f32', m, k)({ y, x: xp, w, m, k, n });
    expect(Array.from(kn.f32(y, m * n))).not.toEqual(Array.from(want));
    const wf = values(n * k);
    const fp = kn.alloc(n * k * 4);
    kn.f32(fp, n * k).set(wf);
    cpuMatmul(kn, qk, 'int8', m, k)({ y, x: xp, w: { at: fp, dtype: 'f32', layout: 'rows' }, m, k, n });
    const f = new Float32Array(m * n);
    ref.matmul(f, x, wf, m, k, n);
    for (let i = 0; i < m * n; i++) expect(kn.f32(y, m * n)[i]).toBeCloseTo(f[i]!, 4);
  });
});
