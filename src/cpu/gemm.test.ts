import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
// @ts-expect-error: a plain .mjs build script, without types
import { compileWat } from '../../scripts/build-wasm.mjs';
import { CPU_GEMM_RELAXED_WASM_BASE64, CPU_GEMM_WASM_BASE64 } from './gemm-wasm.js';
import { CpuGemm, GEMM_MIN_ROWS, matmulFor } from './gemm.js';
import { CpuKernels, relaxedSimdAvailable, type CpuKernelVariant, type CpuWeightDtype } from './kernels.js';
import { CpuPanel, panelBytes, writePanels } from './panel.js';
import { InvalidArgumentError } from '../errors.js';
import { matmulOracle, randoms, worst } from '../../test-support/cpu/kernel-checks.js';
import { f32ToF16 } from '../model/formats/gguf-blocks.js';
import { f16ToF32 } from '../model/formats/safetensors.js';

setFlagsFromString('--experimental-wasm-relaxed-simd');
const variants: CpuKernelVariant[] = relaxedSimdAvailable() ? ['simd', 'relaxed'] : ['simd'];

/** An (n, k) matrix of dtype in panels in kn's memory (two parts, as wq|wk|wv are written), its stored form and the f32 values the oracle takes. */
function panels(kn: CpuKernels, n: number, k: number, dtype: CpuWeightDtype, seed: number): { at: number; stored: Float32Array | Uint16Array; values: Float32Array } {
  let values = randoms(n * k, seed);
  const stored = dtype === 'f32' ? values : Uint16Array.from(values, f32ToF16);
  if (dtype === 'f16') values = Float32Array.from(stored, f16ToF32);
  const at = kn.alloc(panelBytes(n, k, dtype));
  const cut = Math.ceil(n / 3) * k;
  writePanels(kn, at, [stored.subarray(0, cut), stored.subarray(cut)], k);
  return { at, stored, values };
}

describe('CPU GEMM (WebAssembly SIMD)', () => {
  it.each([['simd', CPU_GEMM_WASM_BASE64], ['relaxed', CPU_GEMM_RELAXED_WASM_BASE64]])(
    'the committed %s bytes are the compiled gemm.wat (npm run build:wasm after editing it)', async (variant, committed) => {
      const bytes: Buffer = await compileWat(fileURLToPath(new URL('./gemm.wat', import.meta.url)), variant);
      expect(bytes.toString('base64')).toBe(committed);
    });

  // m: one tile of three rows, a last group of one or two rows, prefill's 64 and an odd 67;
  // k: below 8, a multiple of 8, tails 1..7 past it; n: last panels of 4 or 8 columns, 1..3 of them padding.
  describe.each(variants.flatMap((v) => (['f32', 'f16'] as const).map((d) => [v, d] as const)))('%s, %s weights', (variant, dtype) => {
    it.each([
      [1, 1, 1], [2, 3, 5], [3, 8, 4], [4, 17, 7], [5, 45, 13], [9, 64, 9], [10, 131, 33], [11, 7, 2], [17, 77, 10], [64, 40, 12], [67, 29, 19],
    ])('m %i, k %i, n %i: y = x·wᵀ, then accumulated with a bias, against the oracle', (m, k, n) => {
      const xStride = k + 5; // rows of a wider buffer, as h13's halves are read
      const xs = randoms(m * xStride, 11);
      const x = Float32Array.from({ length: m * k }, (_, i) => xs[Math.floor(i / k) * xStride + (i % k)]!);
      const kn = CpuKernels.create(undefined, { variant });
      const g = CpuGemm.create(kn, k);
      const w = panels(kn, n, k, dtype, 12);
      const bias = randoms(n, 13);
      const y0 = randoms(m * n, 14);
      const [xp, bp, yp] = [kn.put(xs), kn.put(bias), kn.put(new Float32Array(m * n))];
      const { want, mag } = matmulOracle(x, w.values, m, k, n);

      g.gemm({ y: yp, x: xp, xStride, w: w.at, dtype, layout: 'panel', m, k, n });
      const got = kn.f32(yp, m * n).slice();
      expect(worst(got, want, mag)).toBeLessThanOrEqual(1);
      g.gemm({ y: yp, x: xp, xStride, w: w.at, dtype, layout: 'panel', m, k, n });
      expect(Array.from(kn.f32(yp, m * n))).toEqual(Array.from(got));

      kn.f32(yp, m * n).set(y0);
      g.gemm({ y: yp, x: xp, xStride, w: w.at, dtype, layout: 'panel', m, k, n, accumulate: true, bias: bp });
      const acc = want.map((v, i) => Math.fround(y0[i]! + Math.fround(v + bias[i % n]!)));
      const accMag = mag.map((v, i) => v + Math.abs(bias[i % n]!) + Math.abs(y0[i]!));
      expect(worst(kn.f32(yp, m * n), acc, accMag)).toBeLessThanOrEqual(1);
    });
  });

  it('widens subnormal, zero and extreme finite halves exactly, in four-wide and eight-wide panels', () => {
    const halves = [0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x7bff, 0xfbff, 0x3c00, 0x3555];
    const k = 11;
    // n 1: a panel of four columns (the last three padding); n 8: one of eight, the half in column 5.
    for (const [n, col] of [[1, 0], [8, 5]] as const) {
      for (const h of halves) {
        const kn = CpuKernels.create();
        const g = CpuGemm.create(kn, k);
        const rows = new Uint16Array(n * k);
        rows[col * k + 9] = h;
        const w = kn.alloc(panelBytes(n, k, 'f16'));
        writePanels(kn, w, [rows], k);
        const x = Float32Array.from({ length: k * GEMM_MIN_ROWS }, (_, i) => (i % k === 9 ? 1 : 0));
        const [xp, yp] = [kn.put(x), kn.alloc(4 * n * GEMM_MIN_ROWS)];
        g.gemm({ y: yp, x: xp, w, dtype: 'f16', layout: 'panel', m: GEMM_MIN_ROWS, k, n });
        const y = kn.f32(yp, n * GEMM_MIN_ROWS);
        for (let r = 0; r < GEMM_MIN_ROWS; r++) expect(Object.is(y[r * n + col]! + 0, f16ToF32(h) + 0)).toBe(true);
      }
    }
  });

  it.each(['f32', 'f16'] as const)('matmulFor takes the GEMM from GEMM_MIN_ROWS rows on panels, the panel matmul below, and the kernels\' matmul on rows (%s)', (dtype) => {
    const [k, n] = [37, 9];
    const kn = CpuKernels.create();
    const matmul = matmulFor(kn, k);
    const g = CpuGemm.create(kn, k);
    const p = CpuPanel.create(kn, k);
    const w = panels(kn, n, k, dtype, 21);
    const rows = kn.put(w.stored);
    for (const m of [GEMM_MIN_ROWS - 1, GEMM_MIN_ROWS]) {
      const x = randoms(m * k, 22);
      const [xp, y1, y2] = [kn.put(x), kn.alloc(m * n * 4), kn.alloc(m * n * 4)];
      const a = { x: xp, w: w.at, dtype, layout: 'panel' as const, m, k, n };
      matmul({ ...a, y: y1 });
      if (m < GEMM_MIN_ROWS) p.matmul({ ...a, y: y2 });
      else g.gemm({ ...a, y: y2 });
      expect(Array.from(kn.f32(y1, m * n))).toEqual(Array.from(kn.f32(y2, m * n)));
      matmul({ ...a, y: y1, w: rows, layout: 'rows' });
      kn.matmul({ ...a, y: y2, w: rows, layout: 'rows' });
      expect(Array.from(kn.f32(y1, m * n))).toEqual(Array.from(kn.f32(y2, m * n)));
    }
  });

  it('refuses rows or tiled weights and a k past the one it was made for', () => {
    const kn = CpuKernels.create();
    const g = CpuGemm.create(kn, 8);
    const args = { y: 16, x: 16, w: 16, dtype: 'f32' as const, m: 9, k: 8, n: 4 };
    expect(() => g.gemm({ ...args, layout: 'rows' })).toThrow(InvalidArgumentError);
    expect(() => g.gemm({ ...args, layout: 'tiled' })).toThrow(InvalidArgumentError);
    expect(() => g.gemm({ ...args, layout: 'panel', k: 9 })).toThrow(/k ≤ 8, got 9/);
  });
});
