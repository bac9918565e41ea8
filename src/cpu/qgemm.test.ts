import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
// @ts-expect-error: a plain .mjs build script, without types
import { compileWat } from '../../scripts/build-wasm.mjs';
import { CPU_QGEMM_RELAXED_WASM_BASE64, CPU_QGEMM_WASM_BASE64 } from './qgemm-wasm.js';
import { CpuQuantGemm, QGEMM_MIN_ROWS } from './qgemm.js';
import { CpuKernels, relaxedSimdAvailable, type CpuKernelVariant } from './kernels.js';
import { CpuQuantKernels, type CpuQuantDtype, type QuantPart } from './quant.js';
import { InvalidArgumentError } from '../errors.js';
import { dequantizeQ8, matmulQ8, quantizeQ8, type Q8Tensor } from '../model/reference-q8.js';
import { dequantizeQ4, q4ToQ8, quantizeQ4 } from '../model/reference-q4.js';
import { matmulOracle, randoms, worst } from '../../test-support/cpu/kernel-checks.js';

setFlagsFromString('--experimental-wasm-relaxed-simd');
const variants: CpuKernelVariant[] = relaxedSimdAvailable() ? ['simd', 'relaxed'] : ['simd'];
const dtypes: CpuQuantDtype[] = ['q8_0', 'q4_0'];

/** An (n, k) matrix of dtype tiled into kn (in two parts, as wq|wk|wv are), its exact Q8_0 form and its dequantised values. */
function weights(kn: CpuKernels, qk: CpuQuantKernels, n: number, k: number, dtype: CpuQuantDtype, seed: number) {
  const v = randoms(n * k, seed);
  let t: QuantPart;
  let q8: Q8Tensor;
  let values: Float32Array;
  if (dtype === 'q8_0') {
    q8 = quantizeQ8(v, n * k, 32);
    [t, values] = [q8, dequantizeQ8(q8, n * k, 32)];
  } else {
    const t4 = quantizeQ4(v, n * k);
    [t, q8, values] = [t4, q4ToQ8(t4, n * k), dequantizeQ4(t4, n * k)];
  }
  const cut = Math.ceil(n / 3);
  const vb = dtype === 'q8_0' ? k : k / 2;
  const at = kn.alloc(CpuQuantKernels.tiledBytes(n, k, dtype));
  qk.tile(at, [
    { q: t.q.subarray(0, cut * vb), s: t.s.subarray(0, (cut * k) / 32) },
    { q: t.q.subarray(cut * vb), s: t.s.subarray((cut * k) / 32) },
  ], k, dtype);
  return { at, q8, values };
}

/** The kernels, the small-m kernels, the GEMM (for m rows of k) and an (n, k) matrix, on one memory. */
function setup(variant: CpuKernelVariant, m: number, k: number, n: number, dtype: CpuQuantDtype, seed: number) {
  const kn = CpuKernels.create(undefined, { variant });
  const qk = CpuQuantKernels.create(kn);
  return { kn, qk, g: CpuQuantGemm.create(kn, m, k), w: weights(kn, qk, n, k, dtype, seed) };
}

// m: from the threshold, short last groups of rows (1..3), prefill's 64 and an odd 67; k: one
// group, odd group counts; n: odd, short last panels of 1..7 columns.
const sizes = [[9, 32, 1], [10, 96, 5], [11, 160, 13], [12, 64, 8], [17, 224, 7], [33, 96, 19], [64, 288, 9], [67, 128, 31]] as const;

describe('CPU quantised GEMM (WebAssembly SIMD)', () => {
  it.each([['simd', CPU_QGEMM_WASM_BASE64], ['relaxed', CPU_QGEMM_RELAXED_WASM_BASE64]])(
    'the committed %s bytes are the compiled qgemm.wat (npm run build:wasm after editing it)', async (variant, committed) => {
      const bytes: Buffer = await compileWat(fileURLToPath(new URL('./qgemm.wat', import.meta.url)), variant);
      expect(bytes.toString('base64')).toBe(committed);
    });

  describe.each(variants.flatMap((v) => dtypes.map((d) => [v, d] as const)))('%s, %s', (variant, dtype) => {
    it.each(sizes)('m %i, k %i, n %i, int8 activations: runq.c\'s W8A8 sums and the small-m kernel\'s, bit for bit, then accumulated with a bias', (m, k, n) => {
      const x = randoms(m * k, 5, 3);
      const { kn, qk, g, w } = setup(variant, m, k, n, dtype, 6);
      const bias = randoms(n, 8);
      const y0 = randoms(m * n, 9);
      const want = new Float32Array(m * n);
      for (let r = 0; r < m; r++) matmulQ8(want.subarray(r * n, (r + 1) * n), quantizeQ8(x.subarray(r * k, (r + 1) * k), k, 32), w.q8, k, n, 32);
      const [xp, bp, yp, ys] = [kn.put(x), kn.put(bias), kn.alloc(m * n * 4), kn.alloc(m * n * 4)];
      const xa = kn.alloc(CpuQuantKernels.activationBytes(m, k));
      qk.quantize(xa, xp, m, k);
      g.matmulA8({ y: yp, xa, w: w.at, dtype, m, k, n });
      qk.matmulA8({ y: ys, xa, w: w.at, dtype, m, k, n });
      expect(Array.from(kn.f32(yp, m * n))).toEqual(Array.from(want));
      expect(Array.from(kn.f32(ys, m * n))).toEqual(Array.from(want));
      kn.f32(yp, m * n).set(y0);
      g.matmulA8({ y: yp, xa, w: w.at, dtype, m, k, n, accumulate: true, bias: bp });
      expect(Array.from(kn.f32(yp, m * n))).toEqual(Array.from(want, (v, i) => Math.fround(y0[i]! + Math.fround(v + bias[i % n]!))));
    });

    it.each(sizes)('m %i, k %i, n %i, weight-only: the f32 oracle on the dequantised weights, then accumulated with a bias', (m, k, n) => {
      const xStride = k + 5;
      const xs = randoms(m * xStride, 1);
      const x = Float32Array.from({ length: m * k }, (_, i) => xs[Math.floor(i / k) * xStride + (i % k)]!);
      const { kn, g, w } = setup(variant, m, k, n, dtype, 2);
      const bias = randoms(n, 3);
      const y0 = randoms(m * n, 4);
      const { want, mag } = matmulOracle(x, w.values, m, k, n);
      // |got − want| ≤ 1e-5 · (the products' magnitudes) + 1e-6, as quant.test.ts allows the small-m kernel.
      const [xp, bp, yp] = [kn.put(xs), kn.put(bias), kn.alloc(m * n * 4)];
      g.matmul({ y: yp, x: xp, xStride, w: w.at, dtype, m, k, n });
      expect(worst(kn.f32(yp, m * n), want, mag)).toBeLessThanOrEqual(1);
      kn.f32(yp, m * n).set(y0);
      g.matmul({ y: yp, x: xp, xStride, w: w.at, dtype, m, k, n, accumulate: true, bias: bp });
      const acc = want.map((v, i) => Math.fround(y0[i]! + Math.fround(v + bias[i % n]!)));
      const accMag = mag.map((v, i) => v + Math.abs(bias[i % n]!) + Math.abs(y0[i]!));
      expect(worst(kn.f32(yp, m * n), acc, accMag)).toBeLessThanOrEqual(1);
    });
  });

  // A group's largest value sets d = max / −8, so the others at −7/8 of it quantise to nibble 15
  // (the relaxed tile's largest i16 sums) and those equal to it to nibble 0 (−8 once centred).
  it.each(variants.flatMap((v) => [[v, 15, -0.875], [v, 0, 1]] as const))('%s: Q4_0 × int8 at the extremes (nibbles %i against 127 all group long) sums exactly', (variant, nibble, rest) => {
    const [m, k, n] = [QGEMM_MIN_ROWS, 64, 3];
    const kn = CpuKernels.create(undefined, { variant });
    const qk = CpuQuantKernels.create(kn);
    const g = CpuQuantGemm.create(kn, m, k);
    const v = Float32Array.from({ length: n * k }, (_, i) => (i % 32 === 0 ? 1 : rest));
    const t = quantizeQ4(v, n * k);
    expect(Array.from(t.q.subarray(1, 16))).toEqual(Array(15).fill(nibble * 0x11));
    const at = kn.alloc(CpuQuantKernels.tiledBytes(n, k, 'q4_0'));
    qk.tile(at, [t], k, 'q4_0');
    const xp = kn.put(new Float32Array(m * k).fill(1));
    const xa = kn.alloc(CpuQuantKernels.activationBytes(m, k));
    qk.quantize(xa, xp, m, k);
    const [y, ys] = [kn.alloc(m * n * 4), kn.alloc(m * n * 4)];
    g.matmulA8({ y, xa, w: at, dtype: 'q4_0', m, k, n });
    qk.matmulA8({ y: ys, xa, w: at, dtype: 'q4_0', m, k, n });
    const want = new Float32Array(n);
    matmulQ8(want, quantizeQ8(new Float32Array(k).fill(1), k, 32), q4ToQ8(t, n * k), k, n, 32);
    for (let r = 0; r < m; r++) expect(Array.from(kn.f32(y + r * n * 4, n))).toEqual(Array.from(want));
    expect(Array.from(kn.f32(ys, m * n))).toEqual(Array.from(kn.f32(y, m * n)));
  });

  // The rows are repacked into scratch in blocks of four (a short last block padded), so an odd m
  // at the full maxM and maxK is the case that would overrun it.
  it.each(variants.flatMap((v) => dtypes.flatMap((d) => [[v, d, 9], [v, d, 13]] as const)))('%s, %s: m %i at maxM and maxK writes nothing past its scratch', (variant, dtype, m) => {
    const [k, n] = [160, 13];
    const kn = CpuKernels.create(undefined, { variant });
    const qk = CpuQuantKernels.create(kn);
    const w = weights(kn, qk, n, k, dtype, 3);
    const xp = kn.put(randoms(m * k, 4));
    const xa = kn.alloc(CpuQuantKernels.activationBytes(m, k));
    qk.quantize(xa, xp, m, k);
    const y = kn.alloc(m * n * 4);
    const g = CpuQuantGemm.create(kn, m, k);
    const canary = kn.alloc(4096);
    kn.i32(canary, 1024).fill(0x5a5a5a5a);
    g.matmulA8({ y, xa, w: w.at, dtype, m, k, n });
    g.matmul({ y, x: xp, w: w.at, dtype, m, k, n });
    expect(kn.i32(canary, 1024).every((v) => v === 0x5a5a5a5a)).toBe(true);
  });

  it('refuses more rows or a longer k than it was made for', () => {
    const kn = CpuKernels.create();
    const g = CpuQuantGemm.create(kn, QGEMM_MIN_ROWS, 64);
    const a = { y: 16, xa: 16, w: 16, dtype: 'q8_0' as const, m: QGEMM_MIN_ROWS, k: 64, n: 4 };
    expect(() => g.matmulA8({ ...a, k: 96 })).toThrow(InvalidArgumentError);
    expect(() => g.matmulA8({ ...a, m: QGEMM_MIN_ROWS + 1 })).toThrow(/m ≤ 9, k ≤ 64; got m 10, k 64/);
  });
});
