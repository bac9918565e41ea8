import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
// @ts-expect-error: a plain .mjs build script, without types
import { compileWat } from '../../scripts/build-wasm.mjs';
import { CPU_PANEL_RELAXED_WASM_BASE64, CPU_PANEL_WASM_BASE64 } from './panel-wasm.js';
import { CpuPanel, PANEL_MAX_M, panelBytes, writePanels } from './panel.js';
import { CpuGemm } from './gemm.js';
import { CpuKernels, relaxedSimdAvailable, type CpuKernelVariant, type CpuWeightDtype } from './kernels.js';
import { InvalidArgumentError } from '../errors.js';
import { matmulOracle, randoms, rowsOf, worst } from '../../test-support/cpu/kernel-checks.js';
import { f32ToF16 } from '../model/formats/gguf-blocks.js';
import { f16ToF32 } from '../model/formats/safetensors.js';

setFlagsFromString('--experimental-wasm-relaxed-simd');
const variants: CpuKernelVariant[] = relaxedSimdAvailable() ? ['simd', 'relaxed'] : ['simd'];

/** An (n, k) matrix, f32 or halves, in panels in kn's memory (two parts, as wq|wk|wv are written). */
function panels(kn: CpuKernels, w: Float32Array | Uint16Array, n: number, k: number): number {
  const at = kn.alloc(panelBytes(n, k, w instanceof Uint16Array ? 'f16' : 'f32'));
  const cut = Math.ceil(n / 3) * k;
  writePanels(kn, at, [w.subarray(0, cut), w.subarray(cut)], k);
  return at;
}

// Every finite class of half: ±0, the smallest and largest subnormals, the smallest normal, ±max.
const SPECIAL_HALVES = [0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x7bff, 0xfbff];

/**
 * An (n, k) matrix in dtype: its stored form, and the f32 values it holds (the halves widened);
 * halves have every seventh value one of SPECIAL_HALVES.
 */
function weights(n: number, seed: number, dtype: CpuWeightDtype): { stored: Float32Array | Uint16Array; values: Float32Array } {
  const values = randoms(n, seed);
  if (dtype === 'f32') return { stored: values, values };
  const stored = Uint16Array.from(values, (v, i) => (i % 7 === 3 ? SPECIAL_HALVES[(i / 7) % SPECIAL_HALVES.length | 0]! : f32ToF16(v)));
  return { stored, values: Float32Array.from(stored, f16ToF32) };
}

describe('CPU panel matmul (WebAssembly SIMD)', () => {
  it.each([['simd', CPU_PANEL_WASM_BASE64], ['relaxed', CPU_PANEL_RELAXED_WASM_BASE64]])(
    'the committed %s bytes are the compiled panel.wat (npm run build:wasm after editing it)', async (variant, committed) => {
      const bytes: Buffer = await compileWat(fileURLToPath(new URL('./panel.wat', import.meta.url)), variant);
      expect(bytes.toString('base64')).toBe(committed);
    });

  it('lays each block of 16 rows out k-major, a short last block as wide as its rows rounded up to four, padding zero', () => {
    const [n, k] = [21, 3];
    const w = Float32Array.from({ length: n * k }, (_, i) => 1 + i);
    const kn = CpuKernels.create();
    const at = panels(kn, w, n, k);
    expect(panelBytes(n, k)).toBe(24 * k * 4);
    const got = kn.f32(at, 24 * k);
    // Block 0: turn j holds row c's weight j at j·16 + c.
    for (let j = 0; j < k; j++) for (let c = 0; c < 16; c++) expect(got[j * 16 + c]).toBe(w[c * k + j]);
    // Block 1: rows 16..20, 8 wide, rows 21..23 zero.
    for (let j = 0; j < k; j++) {
      for (let c = 0; c < 8; c++) expect(got[16 * k + j * 8 + c]).toBe(16 + c < n ? w[(16 + c) * k + j] : 0);
    }
  });

  // k: below 4, one chunk, several chunks with a short last one; n: whole blocks, last blocks of
  // 4, 8 and 12 wide with 1..3 padding rows; m: each tile (4 × 8, 2 × 16, 1 × 16) and their mixes.
  describe.each(variants.flatMap((v) => (['f32', 'f16'] as const).map((d) => [v, d] as const)))('%s, %s weights', (variant, dtype) => {
    it.each([
      [1, 1, 1], [1, 3, 5], [2, 17, 16], [3, 45, 13], [4, 64, 33], [5, 131, 19], [6, 7, 47], [7, 200, 30], [8, 77, 10], [8, 129, 64], [1, 300, 29],
      // One f32 row takes whole blocks two at a time: only pairs, then a whole block, a block with
      // padding rows or one 4 wide; k under one chunk of 16 turns, exactly one, several with a short last.
      [1, 5, 32], [1, 33, 64], [1, 70, 61], [1, 16, 45], [1, 131, 100],
      // More f32 rows take up to four whole blocks in lockstep: three, four then one, four then two,
      // six, three then one 13 wide; k under 16 turns, exactly 16, several with a short last.
      [2, 5, 48], [3, 16, 80], [5, 70, 100], [8, 33, 96], [6, 131, 61],
    ])('m %i, k %i, n %i: y = x·wᵀ, then accumulated with a bias, against the oracle (and the kernels\' matmul on the same rows)', (m, k, n) => {
      const xStride = k + 3; // rows of a wider buffer, as the siluMul halves of h13 are read
      const xData = randoms(m * xStride, 1);
      const x = rowsOf(xData, m, k, xStride);
      const { stored, values: w } = weights(n * k, 2, dtype);
      const bias = randoms(n, 3);
      const y0 = randoms(m * n, 4);
      const { want, mag } = matmulOracle(x, w, m, k, n);
      const kn = CpuKernels.create(undefined, { variant });
      const p = CpuPanel.create(kn, k);
      const [xp, bp, yp] = [kn.put(xData), kn.put(bias), kn.put(new Float32Array(m * n))];
      const wp = panels(kn, stored, n, k);
      const a = { y: yp, x: xp, xStride, w: wp, dtype, layout: 'panel' as const, m, k, n };
      p.matmul(a);
      const got = kn.f32(yp, m * n).slice();
      expect(worst(got, want, mag)).toBeLessThanOrEqual(1);
      // The kernels' matmul on the same matrix in rows sums in another order: equal up to rounding.
      kn.matmul({ ...a, w: kn.put(stored), layout: 'rows' });
      expect(worst(kn.f32(yp, m * n), got, mag)).toBeLessThanOrEqual(1);
      // The same bits on every call.
      p.matmul(a);
      expect(Array.from(kn.f32(yp, m * n))).toEqual(Array.from(got));
      // The row-parallel form: y0 + (x·wᵀ + bias).
      kn.f32(yp, m * n).set(y0);
      p.matmul({ ...a, accumulate: true, bias: bp });
      const acc = want.map((v, i) => Math.fround(y0[i]! + Math.fround(v + bias[i % n]!)));
      const accMag = mag.map((v, i) => v + Math.abs(bias[i % n]!) + Math.abs(y0[i]!));
      expect(worst(kn.f32(yp, m * n), acc, accMag)).toBeLessThanOrEqual(1);
    });

    // The matrix ends at the memory's last byte, so a read past it would trap. n 27: a last block
    // 12 wide, whose last four columns the GEMM packs alone; n 6: one block 8 wide; n 61, 96, 44:
    // one f32 row's block pairs (then a whole block and a padded one; only pairs; then a block 12
    // wide) against the batches' tiles.
    it.each([[70, 29], [131, 45], [38, 27], [10, 6], [70, 61], [17, 96], [6, 44]])('k %i, n %i: every row of 1..8 (panel) and 9, 17 (GEMM) rows gets the bits it gets alone', (k, n) => {
      const maxM = 17;
      const x = randoms(maxM * k, 31);
      const { stored, values: w } = weights(n * k, 32, dtype);
      const kn = CpuKernels.create(undefined, { variant });
      const p = CpuPanel.create(kn, k);
      const g = CpuGemm.create(kn, k);
      const [xp, yp] = [kn.put(x), kn.alloc(maxM * n * 4)];
      // Halves: the same sums as f32 panels of their values, so the same bits as f32 weights.
      const f32p = dtype === 'f16' ? panels(kn, w, n, k) : 0;
      const wBytes = panelBytes(n, k, dtype);
      const mark = kn.mark();
      kn.alloc(wBytes); // grows the memory to hold them, then pads so that they end where it does
      kn.release(mark);
      kn.alloc(kn.memory.buffer.byteLength - mark - wBytes);
      const wp = kn.alloc(wBytes);
      expect(wp + wBytes).toBe(kn.memory.buffer.byteLength);
      writePanels(kn, wp, [stored], k);
      const a = { y: yp, x: xp, w: wp, dtype, layout: 'panel' as const, k, n };
      const alone = new Float32Array(maxM * n);
      for (let r = 0; r < maxM; r++) {
        p.matmul({ ...a, x: xp + r * k * 4, m: 1 });
        alone.set(kn.f32(yp, n), r * n);
      }
      const { want, mag } = matmulOracle(x, w, maxM, k, n);
      expect(worst(alone, want, mag)).toBeLessThanOrEqual(1);
      for (let m = 2; m <= PANEL_MAX_M; m++) {
        p.matmul({ ...a, m });
        expect(Array.from(kn.f32(yp, m * n)), `m ${m}`).toEqual(Array.from(alone.subarray(0, m * n)));
      }
      for (const m of [9, 17]) {
        g.gemm({ ...a, m });
        expect(Array.from(kn.f32(yp, m * n)), `GEMM m ${m}`).toEqual(Array.from(alone.subarray(0, m * n)));
      }
      if (dtype === 'f16') {
        for (const m of [1, 3, 8]) {
          p.matmul({ ...a, w: f32p, dtype: 'f32', m });
          expect(Array.from(kn.f32(yp, m * n)), `f32 panels, m ${m}`).toEqual(Array.from(alone.subarray(0, m * n)));
        }
      }
    });
  });

  it('refuses more rows than it takes, another layout, and panels to the kernels\' matmul, typed', () => {
    const kn = CpuKernels.create();
    const p = CpuPanel.create(kn, 8);
    const a = { y: 16, x: 16, w: 16, dtype: 'f32' as const, layout: 'panel' as const, m: 1, k: 8, n: 4 };
    expect(() => p.matmul({ ...a, m: PANEL_MAX_M + 1 })).toThrow(InvalidArgumentError);
    expect(() => p.matmul({ ...a, k: 9 })).toThrow(InvalidArgumentError);
    expect(() => p.matmul({ ...a, layout: 'tiled' })).toThrow(InvalidArgumentError);
    expect(() => p.matmul({ ...a, dtype: 'f16', layout: 'tiled' })).toThrow(InvalidArgumentError);
    expect(() => kn.matmul(a)).toThrow(InvalidArgumentError);
  });
});
