import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
// @ts-expect-error: a plain .mjs build script, without types
import { compileWat } from '../../scripts/build-wasm.mjs';
import { CPU_QUANT_RELAXED_WASM_BASE64, CPU_QUANT_WASM_BASE64 } from './quant-wasm.js';
import { CpuKernels, relaxedSimdAvailable, type CpuKernelVariant } from './kernels.js';
import { CpuQuantKernels, type CpuQuantDtype, type QuantPart } from './quant.js';
import { dequantizeQ8, matmulQ8, quantizeQ8 } from '../model/reference-q8.js';
import { dequantizeQ4, q4ToQ8, quantizeQ4 } from '../model/reference-q4.js';
import { matmulOracle, randoms, rowsOf, worst } from '../../test-support/cpu/kernel-checks.js';

/** An (n, k) matrix in dtype from random values: its stored form, its exact Q8_0 form and its dequantised values. */
function quantMatrix(n: number, k: number, seed: number, dtype: CpuQuantDtype): { stored: QuantPart; q8: { q: Int8Array; s: Float32Array }; values: Float32Array } {
  const x = randoms(n * k, seed);
  if (dtype === 'q8_0') {
    const t = quantizeQ8(x, n * k, 32);
    return { stored: t, q8: t, values: dequantizeQ8(t, n * k, 32) };
  }
  const t = quantizeQ4(x, n * k);
  return { stored: t, q8: q4ToQ8(t, n * k), values: dequantizeQ4(t, n * k) };
}

/** The first rows of a part, and the rest: wq|wk|wv are tiled together. */
function halves(p: QuantPart, n: number, k: number, dtype: CpuQuantDtype): QuantPart[] {
  const cut = Math.floor(n / 2);
  const vb = dtype === 'q8_0' ? k : k / 2;
  const sg = k / 32;
  return [
    { q: p.q.subarray(0, cut * vb), s: p.s.subarray(0, cut * sg) },
    { q: p.q.subarray(cut * vb), s: p.s.subarray(cut * sg) },
  ];
}

function tiled(kn: CpuKernels, qk: CpuQuantKernels, p: QuantPart, n: number, k: number, dtype: CpuQuantDtype): number {
  const at = kn.alloc(CpuQuantKernels.tiledBytes(n, k, dtype));
  qk.tile(at, halves(p, n, k, dtype), k, dtype);
  return at;
}


setFlagsFromString('--experimental-wasm-relaxed-simd');
const variants: CpuKernelVariant[] = relaxedSimdAvailable() ? ['simd', 'relaxed'] : ['simd'];
const dtypes: CpuQuantDtype[] = ['q8_0', 'q4_0'];
// k: one group, odd group counts; n: short last blocks of 1..3 rows; m: the gemv and small batches.
const sizes = [[1, 32, 1], [1, 96, 5], [1, 160, 13], [2, 64, 6], [3, 224, 7], [5, 96, 10], [8, 32, 3], [4, 288, 9]] as const;

describe('CPU quantised kernels (WebAssembly SIMD)', () => {
  it.each([['simd', CPU_QUANT_WASM_BASE64], ['relaxed', CPU_QUANT_RELAXED_WASM_BASE64]])(
    'the committed %s bytes are the compiled quant.wat (npm run build:wasm after editing it)', async (variant, committed) => {
      const bytes: Buffer = await compileWat(fileURLToPath(new URL('./quant.wat', import.meta.url)), variant);
      expect(bytes.toString('base64')).toBe(committed);
    });

  describe.each(variants.flatMap((v) => dtypes.map((d) => [v, d] as const)))('weight-only matmul (%s), %s', (variant, dtype) => {
    it.each(sizes)('m %i, k %i, n %i: the f32 oracle on the dequantised weights, then accumulated with a bias', (m, k, n) => {
      const xStride = k + 5;
      const xData = randoms(m * xStride, 1);
      const x = rowsOf(xData, m, k, xStride);
      const w = quantMatrix(n, k, 2, dtype);
      const bias = randoms(n, 3);
      const y0 = randoms(m * n, 4);
      const { want, mag } = matmulOracle(x, w.values, m, k, n);
      const kn = CpuKernels.create(undefined, { variant });
      const qk = CpuQuantKernels.create(kn);
      const [xp, bp, yp] = [kn.put(xData), kn.put(bias), kn.alloc(m * n * 4)];
      const wp = tiled(kn, qk, w.stored, n, k, dtype);
      qk.matmul({ y: yp, x: xp, xStride, w: wp, dtype, m, k, n });
      const got = kn.f32(yp, m * n).slice();
      expect(worst(got, want, mag)).toBeLessThanOrEqual(1);
      qk.matmul({ y: yp, x: xp, xStride, w: wp, dtype, m, k, n });
      expect(Array.from(kn.f32(yp, m * n))).toEqual(Array.from(got));
      kn.f32(yp, m * n).set(y0);
      qk.matmul({ y: yp, x: xp, xStride, w: wp, dtype, m, k, n, accumulate: true, bias: bp });
      const acc = want.map((v, i) => Math.fround(y0[i]! + Math.fround(v + bias[i % n]!)));
      const accMag = mag.map((v, i) => v + Math.abs(bias[i % n]!) + Math.abs(y0[i]!));
      expect(worst(kn.f32(yp, m * n), acc, accMag)).toBeLessThanOrEqual(1);
    });
  });

  describe.each(variants)('int8 activations (%s)', (variant) => {
    it('quantises each row per group to runq.c\'s values and scales, zero groups and halves included', () => {
      const m = 3;
      const k = 128;
      const xStride = k + 3;
      const x = randoms(m * xStride, 7, 40);
      // An all-zero group, and values exactly half way between two steps (127 · 0.5 / 127 · scale).
      x.fill(0, xStride + 32, xStride + 64);
      for (let j = 0; j < 32; j++) x[2 * xStride + j] = j === 0 ? 127 : j + 0.5;
      const kn = CpuKernels.create(undefined, { variant });
      const qk = CpuQuantKernels.create(kn);
      const xp = kn.put(x);
      const xa = kn.alloc(CpuQuantKernels.activationBytes(m, k));
      qk.quantize(xa, xp, m, k, xStride);
      const rowBytes = k + k / 4;
      for (let r = 0; r < m; r++) {
        const want = quantizeQ8(x.subarray(r * xStride, r * xStride + k), k, 32);
        const at = xa + r * rowBytes;
        expect(Array.from(new Int8Array(kn.memory.buffer, at, k)), `row ${r}`).toEqual(Array.from(want.q));
        expect(Array.from(kn.f32(at + k, k / 32)), `row ${r}`).toEqual(Array.from(want.s));
        const sums = Array.from({ length: k / 32 }, (_, g) => want.q.subarray(g * 32, g * 32 + 32).reduce((a, b) => a + b, 0));
        expect(Array.from(kn.i32(at + k + k / 8, k / 32)), `row ${r}`).toEqual(sums);
        // The sign planes after the rows: per group max(q, 0), then max(−q, 0).
        const planes = new Int8Array(kn.memory.buffer, xa + m * rowBytes + r * 2 * k, 2 * k);
        const wantPlanes = Array.from({ length: k / 32 }, (_, g) => {
          const q = Array.from(want.q.subarray(g * 32, g * 32 + 32));
          return [...q.map((v) => Math.max(v, 0)), ...q.map((v) => Math.max(-v, 0))];
        }).flat();
        expect(Array.from(planes), `row ${r}`).toEqual(wantPlanes);
      }
      expect(Array.from(new Int8Array(kn.memory.buffer, xa + 2 * rowBytes, 4))).toEqual([127, 2, 3, 4]);
      // Without planes the rows are the same and nothing after them is written.
      const xb = kn.alloc(CpuQuantKernels.activationBytes(m, k));
      new Int8Array(kn.memory.buffer, xb, CpuQuantKernels.activationBytes(m, k)).fill(-7);
      qk.quantize(xb, xp, m, k, xStride, false);
      expect(Array.from(new Int8Array(kn.memory.buffer, xb, m * rowBytes))).toEqual(Array.from(new Int8Array(kn.memory.buffer, xa, m * rowBytes)));
      expect(new Int8Array(kn.memory.buffer, xb + m * rowBytes, 2 * m * k).every((v) => v === -7)).toBe(true);
    });

    describe.each(dtypes)('%s', (dtype) => {
      it.each(sizes)('m %i, k %i, n %i: runq.c\'s W8A8 sums bit for bit, then accumulated with a bias', (m, k, n) => {
        const x = randoms(m * k, 5, 3);
        const w = quantMatrix(n, k, 6, dtype);
        const bias = randoms(n, 8);
        const y0 = randoms(m * n, 9);
        const want = new Float32Array(m * n);
        for (let r = 0; r < m; r++) {
          const xq = quantizeQ8(x.subarray(r * k, (r + 1) * k), k, 32);
          matmulQ8(want.subarray(r * n, (r + 1) * n), xq, w.q8, k, n, 32);
        }
        const kn = CpuKernels.create(undefined, { variant });
        const qk = CpuQuantKernels.create(kn);
        const [xp, bp, yp] = [kn.put(x), kn.put(bias), kn.alloc(m * n * 4)];
        const xa = kn.alloc(CpuQuantKernels.activationBytes(m, k));
        const wp = tiled(kn, qk, w.stored, n, k, dtype);
        qk.quantize(xa, xp, m, k);
        qk.matmulA8({ y: yp, xa, w: wp, dtype, m, k, n });
        expect(Array.from(kn.f32(yp, m * n))).toEqual(Array.from(want));
        kn.f32(yp, m * n).set(y0);
        qk.matmulA8({ y: yp, xa, w: wp, dtype, m, k, n, accumulate: true, bias: bp });
        expect(Array.from(kn.f32(yp, m * n))).toEqual(Array.from(want, (v, i) => Math.fround(y0[i]! + Math.fround(v + bias[i % n]!))));
      });
    });
  });

  it.each(variants)('Q8_0 × int8 (%s) at the integer extremes: weights −128 and 127 against ±127, the runq.c sums', (variant) => {
    const [m, k, n] = [2, 64, 6];
    // Rows of −128, of 127, and alternating or mixed signs, so every i16 pair sum reaches its bound.
    const q = new Int8Array(n * k).map((_, i) => {
      const [r, j] = [Math.floor(i / k), i % k];
      return [-128, 127, j % 2 ? -128 : 127, j % 3 ? 127 : -128, -128 + (j % 7), 127 - (j % 5)][r]!;
    });
    const w = { q, s: Float32Array.from({ length: (n * k) / 32 }, (_, i) => 0.5 + i / 64) };
    const x = Float32Array.from({ length: m * k }, (_, i) => (i < k ? (i % 2 ? -1 : 1) : i % 4 < 2 ? 1 : -1) * (1 + (i % 3) / 1e3));
    const want = new Float32Array(m * n);
    for (let r = 0; r < m; r++) matmulQ8(want.subarray(r * n, (r + 1) * n), quantizeQ8(x.subarray(r * k, (r + 1) * k), k, 32), w, k, n, 32);
    const kn = CpuKernels.create(undefined, { variant });
    const qk = CpuQuantKernels.create(kn);
    const [xp, yp] = [kn.put(x), kn.alloc(m * n * 4)];
    const xa = kn.alloc(CpuQuantKernels.activationBytes(m, k));
    const wp = tiled(kn, qk, w, n, k, 'q8_0');
    qk.quantize(xa, xp, m, k);
    expect(Array.from(new Int8Array(kn.memory.buffer, xa, 4))).toEqual([127, -127, 127, -127]);
    qk.matmulA8({ y: yp, xa, w: wp, dtype: 'q8_0', m, k, n });
    expect(Array.from(kn.f32(yp, m * n))).toEqual(Array.from(want));
  });

  it.each(dtypes)('embeds %s rows dequantised as runq.c does', (dtype) => {
    const vocab = 7;
    const dim = 96;
    const w = quantMatrix(vocab, dim, 11, dtype);
    const kn = CpuKernels.create();
    const qk = CpuQuantKernels.create(kn);
    const [qp, sp] = [kn.put(w.stored.q), kn.put(w.stored.s)];
    const tokens = Int32Array.of(6, 0, 3, 3);
    const tp = kn.put(tokens);
    const yp = kn.alloc(tokens.length * dim * 4);
    qk.embed(yp, qp, sp, tp, tokens.length, dim, dtype);
    const want = Array.from(tokens).flatMap((t) => Array.from(w.values.subarray(t * dim, (t + 1) * dim)));
    expect(Array.from(kn.f32(yp, tokens.length * dim))).toEqual(want);
  });
});
