import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
// @ts-expect-error: a plain .mjs build script, without types
import { compileWat } from '../../scripts/build-wasm.mjs';
import { CPU_KQUANT_RELAXED_WASM_BASE64, CPU_KQUANT_WASM_BASE64 } from './kquant-wasm.js';
import { CpuKernels, relaxedSimdAvailable, type CpuKernelVariant } from './kernels.js';
import { CpuQuantKernels } from './quant.js';
import { CpuKQuantKernels, type KqForm, type KqPart } from './kquant.js';
import { quantizeQ8 } from '../model/reference-q8.js';
import { matmulQ8mA8, q8mOf } from '../model/reference-q8m.js';
import { AFFINE_BLOCK, AFFINE_GROUP, AFFINE_TYPES, dequantizeAffine, splitAffineBlocks, type AffineType } from '../model/formats/gguf-kquants.js';
import { mulberry32 } from '../model/mulberry32.js';
import { matmulOracle, randoms, rowsOf, worst } from '../../test-support/cpu/kernel-checks.js';
import { f32ToF16 } from '../model/formats/gguf-blocks.js';
import { f16ToF32 } from '../model/formats/safetensors.js';
import { quantizeAny } from '../model/formats/gguf-kquants-write.js';

const f = Math.fround;

/** An (n, k) matrix of random values stored as `type`: its q8_m part and ggml's dequantised values. */
function affineMatrix(type: AffineType, n: number, k: number, seed: number): { part: KqPart; values: Float32Array } {
  const blocks = quantizeAny(type, randoms(n * k, seed));
  const q = new Uint8Array(n * k);
  const s = new Float32Array(((n * k) / AFFINE_GROUP[type]) * 2);
  splitAffineBlocks(type, blocks, q, s);
  const values = new Float32Array(n * k);
  dequantizeAffine(type, blocks, values);
  return { part: { q, s, groupSize: AFFINE_GROUP[type] }, values };
}

/** The q8_m form of a GGUF Q8_0 matrix (f16 scales; codes q + 128 up to 255, min −128·s), as q8m-views.ts makes it. */
function q8Matrix(n: number, k: number, seed: number): { part: KqPart; values: Float32Array } {
  const t = quantizeQ8(randoms(n * k, seed), n * k, 32);
  const part = q8mOf({ kind: 'q8_0', t: { q: t.q, s: t.s.map((x) => f16ToF32(f32ToF16(x))) } }, n * k);
  const values = Float32Array.from(part.q, (c, e) => f(c * part.s[2 * Math.floor(e / 32)]! + part.s[2 * Math.floor(e / 32) + 1]!));
  return { part, values };
}

/** The first rows of a part, and the rest: fused parts tile together. */
function halves(p: KqPart, n: number, k: number): KqPart[] {
  const cut = Math.floor(n / 2) * k;
  const sc = (cut / p.groupSize) * 2;
  return [
    { q: p.q.subarray(0, cut), s: p.s.subarray(0, sc), groupSize: p.groupSize },
    { q: p.q.subarray(cut), s: p.s.subarray(sc), groupSize: p.groupSize },
  ];
}

/** The int8 oracle (reference-q8m.ts), row by row. */
function matmulA8Oracle(x: Float32Array, w: KqPart, m: number, k: number, n: number): Float32Array {
  const y = new Float32Array(m * n);
  for (let r = 0; r < m; r++) matmulQ8mA8(y.subarray(r * n, (r + 1) * n), quantizeQ8(x.subarray(r * k, (r + 1) * k), k, 32), w, k, n);
  return y;
}

setFlagsFromString('--experimental-wasm-relaxed-simd');
const variants: CpuKernelVariant[] = relaxedSimdAvailable() ? ['simd', 'relaxed'] : ['simd'];
const formOf: Record<AffineType, KqForm> = { Q4_1: 'nibble', Q5_0: 'small32', Q5_1: 'small32', Q4_K: 'nibble', Q5_K: 'small32', Q6_K: 'q6' };
// k: whole blocks (256 for the K-quants; odd counts of 32 for the rest); n: short last blocks of 1..3 rows; m: the gemv to 9 rows.
const sizesOf = (t: AffineType): [number, number, number][] => (AFFINE_BLOCK[t].values === 256
  ? [[1, 256, 5], [3, 512, 7], [9, 256, 10]]
  : [[1, 96, 13], [4, 160, 6], [9, 32, 3]]);

type Case = { what: string; mat: (n: number, k: number, seed: number) => { part: KqPart; values: Float32Array }; form: KqForm; sizes: [number, number, number][] };
const cases: Case[] = [
  ...AFFINE_TYPES.map((t): Case => ({ what: t, mat: (n, k, s) => affineMatrix(t, n, k, s), form: formOf[t], sizes: sizesOf(t) })),
  { what: 'Q8_0 as q8_m (codes to 255)', mat: q8Matrix, form: 'byte32', sizes: [[1, 64, 5], [6, 96, 9]] },
];

describe('CPU q8_m kernels (WebAssembly SIMD)', () => {
  it.each([['simd', CPU_KQUANT_WASM_BASE64], ['relaxed', CPU_KQUANT_RELAXED_WASM_BASE64]])(
    'the committed %s bytes are the compiled kquant.wat (npm run build:wasm after editing it)', async (variant, committed) => {
      const bytes: Buffer = await compileWat(fileURLToPath(new URL('./kquant.wat', import.meta.url)), variant);
      expect(bytes.toString('base64')).toBe(committed);
    });

  it.each(cases.map((c) => [c.what, c] as const))('%s tiles in its form: nibbles only where every code is below 16, q6 for Q6_K\'s groups, small bytes where below 64', (_, c) => {
    expect(CpuKQuantKernels.formOf(c.mat(4, c.sizes[0]![1], 1).part)).toBe(c.form);
  });

  describe.each(variants.flatMap((v) => cases.map((c) => [v, c.what, c] as const)))('%s, %s', (variant, _, c) => {
    it.each(c.sizes)('m %i, k %i, n %i: weight-only against the f32 oracle on ggml\'s dequantised weights; int8 against its sums bit for bit', (m, k, n) => {
      const { part, values } = c.mat(n, k, 2);
      const xStride = k + 3;
      const xData = randoms(m * xStride, 1, 2);
      const x = rowsOf(xData, m, k, xStride);
      const { want, mag } = matmulOracle(x, values, m, k, n);
      const kn = CpuKernels.create(undefined, { variant });
      const qk = CpuQuantKernels.create(kn);
      const kq = CpuKQuantKernels.create(kn);
      const bias = randoms(n, 3);
      const [xp, bp] = [kn.put(xData), kn.put(bias)];
      // y rows wider than n: the matrix writes its columns of a fused output.
      const ys = n + 2;
      const yp = kn.alloc(m * ys * 4);
      const wp = kn.alloc(CpuKQuantKernels.tiledBytes(n, k, c.form));
      kq.tile(wp, halves(part, n, k), k, c.form);
      const sums = kn.alloc(CpuKQuantKernels.sumsBytes(m, k));
      kq.sums16(sums, xp, m, k, xStride);
      const cols = (at: number) => Float32Array.from({ length: m * n }, (_, i) => kn.f32(at, m * ys)[Math.floor(i / n) * ys + (i % n)]!);
      kn.f32(yp, m * ys).fill(7);
      kq.matmul({ y: yp, ys, x: xp, xStride, xs16: sums, w: wp, form: c.form, m, k, n });
      expect(worst(cols(yp), want, mag, 2e-5)).toBeLessThanOrEqual(1);
      for (let r = 0; r < m; r++) expect(Array.from(kn.f32(yp + (r * ys + n) * 4, 2))).toEqual([7, 7]);
      const got = cols(yp);
      kq.matmul({ y: yp, ys, x: xp, xStride, xs16: sums, w: wp, form: c.form, m, k, n, accumulate: true, bias: bp });
      expect(Array.from(cols(yp))).toEqual(Array.from(got, (v, i) => f(v + f(v + bias[i % n]!))));

      const xa = kn.alloc(CpuQuantKernels.activationBytes(m, k));
      qk.quantize(xa, xp, m, k, xStride);
      kq.a8sums16(sums, xa, m, k);
      kq.matmulA8({ y: yp, ys, xa, xi16: sums, w: wp, form: c.form, m, k, n });
      const want8 = matmulA8Oracle(x, part, m, k, n);
      expect(Array.from(cols(yp))).toEqual(Array.from(want8));
      // Not the weight-only sums: the activations were quantised.
      expect(Array.from(cols(yp))).not.toEqual(Array.from(got));
      kq.matmulA8({ y: yp, ys, xa, xi16: sums, w: wp, form: c.form, m, k, n, accumulate: true, bias: bp });
      expect(Array.from(cols(yp))).toEqual(Array.from(want8, (v, i) => f(v + f(v + bias[i % n]!))));
    });
  });

  // The i8 × i7 dot sums products in i16 lanes: codes of 63 against activations of ±127 whose
  // signs agree over each group fill them to 4·127·63 (IDOT) and 2·127·63 (a group of 16's half).
  // q6 (mins −32·scale) mixes in codes of 0: its top two bits all set or all clear.
  const bounds: [KqForm, number][] = [['small32', 32], ['small16', 16], ['q6', 16]];
  describe.each(variants.flatMap((v) => bounds.map(([form, gs]) => [v, form, gs] as const)))('%s, codes at 63 as %s (groups of %i)', (variant, form, groupSize) => {
    const [m, k, n] = [3, 256, 6];
    const r = mulberry32(9);
    const q = Uint8Array.from({ length: n * k }, () => (r() < 0.8 ? 63 : form === 'q6' && r() < 0.5 ? 0 : Math.floor(r() * 64)));
    const s = randoms(((n * k) / groupSize) * 2, 4);
    if (form === 'q6') for (let g = 0; g < s.length; g += 2) s[g + 1] = f(-32 * s[g]!);
    const part: KqPart = { q, s, groupSize };

    it('tiles small, and int8 sums equal the oracle bit for bit at the i16 lanes\' bound', () => {
      expect(CpuKQuantKernels.formOf(part)).toBe(form);
      const x = Float32Array.from({ length: m * k }, (_, i) => ((Math.floor(i / 32) + Math.floor(i / k)) % 3 === 1 ? -1 : 1) * (1 + (i % 5) / 1e4));
      const kn = CpuKernels.create(undefined, { variant });
      const qk = CpuQuantKernels.create(kn);
      const kq = CpuKQuantKernels.create(kn);
      const xp = kn.put(x);
      const wp = kn.alloc(CpuKQuantKernels.tiledBytes(n, k, form));
      kq.tile(wp, [part], k, form);
      const xa = kn.alloc(CpuQuantKernels.activationBytes(m, k));
      qk.quantize(xa, xp, m, k);
      // every activation quantises to ±127: the lanes' bound is reached
      expect(Array.from(new Int8Array(kn.memory.buffer, xa, k)).every((v) => Math.abs(v) === 127)).toBe(true);
      const sums = kn.alloc(CpuKQuantKernels.sumsBytes(m, k));
      kq.a8sums16(sums, xa, m, k);
      const yp = kn.alloc(m * n * 4);
      kq.matmulA8({ y: yp, xa, xi16: sums, w: wp, form, m, k, n });
      expect(Array.from(kn.f32(yp, m * n))).toEqual(Array.from(matmulA8Oracle(x, part, m, k, n)));
    });

    it('refuses to tile a code of 64 or more as small', () => {
      const kn = CpuKernels.create(undefined, { variant });
      const kq = CpuKQuantKernels.create(kn);
      const big = Uint8Array.from(q);
      big[k + 17] = 64;
      const wp = kn.alloc(CpuKQuantKernels.tiledBytes(n, k, form));
      expect(CpuKQuantKernels.formOf({ ...part, q: big })).toBe(groupSize === 16 ? 'byte16' : 'byte32');
      expect(() => kq.tile(wp, [{ ...part, q: big }], k, form)).toThrow(`codes of 64 or more cannot tile as ${form}`);
    });
  });

  // q6 drops the mins (each exactly −32·scale) and computes them: the same sums as the small16
  // tiles of the same matrix, bit for bit, weight-only and int8.
  describe.each(variants)('%s, Q6_K as q6 against small16', (variant) => {
    it.each([[1, 256, 5], [4, 512, 7], [9, 768, 10]])('m %i, k %i, n %i: the same bits', (m, k, n) => {
      const { part } = affineMatrix('Q6_K', n, k, 5);
      const kn = CpuKernels.create(undefined, { variant });
      const qk = CpuQuantKernels.create(kn);
      const kq = CpuKQuantKernels.create(kn);
      const x = randoms(m * k, 6);
      const xp = kn.put(x);
      const sums = kn.alloc(CpuKQuantKernels.sumsBytes(m, k));
      const xa = kn.alloc(CpuQuantKernels.activationBytes(m, k));
      qk.quantize(xa, xp, m, k);
      const run = (form: KqForm): [number[], number[]] => {
        const wp = kn.alloc(CpuKQuantKernels.tiledBytes(n, k, form));
        kq.tile(wp, halves(part, n, k), k, form);
        const yp = kn.alloc(m * n * 4);
        kq.sums16(sums, xp, m, k);
        kq.matmul({ y: yp, x: xp, xs16: sums, w: wp, form, m, k, n });
        const y = Array.from(kn.f32(yp, m * n));
        kq.a8sums16(sums, xa, m, k);
        kq.matmulA8({ y: yp, xa, xi16: sums, w: wp, form, m, k, n });
        return [y, Array.from(kn.f32(yp, m * n))];
      };
      // 1.25 bytes a value (rows padded to four), against small16's 1.5
      expect(CpuKQuantKernels.tiledBytes(n, k, 'q6')).toBe(Math.ceil(n / 4) * 4 * k * 1.25);
      expect(CpuKQuantKernels.tiledBytes(n, k, 'small16')).toBe(Math.ceil(n / 4) * 4 * k * 1.5);
      const [q6, small] = [run('q6'), run('small16')];
      expect(q6[0]).toEqual(small[0]);
      expect(q6[1]).toEqual(small[1]);
      expect(q6[1]).toEqual(Array.from(matmulA8Oracle(x, part, m, k, n)));
    });

    it('refuses to tile as q6 a group whose min is not −32·scale', () => {
      const { part } = affineMatrix('Q6_K', 4, 256, 7);
      const s = Float32Array.from(part.s);
      s[2 * 5 + 1] = f(s[2 * 5 + 1]! + 2 ** -20);
      const odd = { ...part, s };
      expect(CpuKQuantKernels.formOf(odd)).toBe('small16');
      const kn = CpuKernels.create(undefined, { variant });
      const kq = CpuKQuantKernels.create(kn);
      const wp = kn.alloc(CpuKQuantKernels.tiledBytes(4, 256, 'q6'));
      expect(() => kq.tile(wp, [odd], 256, 'q6')).toThrow(/min is not −32·scale cannot tile as q6/);
    });
  });

  it.each(cases.map((c) => [c.what, c] as const))('embeds %s rows exactly as ggml dequantises them', (_, c) => {
    const dim = c.sizes[0]![1];
    const vocab = 7;
    const { part, values } = c.mat(vocab, dim, 11);
    const kn = CpuKernels.create();
    const kq = CpuKQuantKernels.create(kn);
    const [qp, sp] = [kn.put(part.q), kn.put(part.s)];
    const tokens = Int32Array.of(6, 0, 3, 3);
    const tp = kn.put(tokens);
    const yp = kn.alloc(tokens.length * dim * 4);
    kq.embed(yp, qp, sp, tp, tokens.length, dim, part.groupSize);
    // code·scale + min gives +0 where ggml's (q − 16)·d gives −0: the same number.
    const want = Array.from(tokens).flatMap((t) => Array.from(values.subarray(t * dim, (t + 1) * dim), (v) => v + 0));
    expect(Array.from(kn.f32(yp, tokens.length * dim), (v) => v + 0)).toEqual(want);
  });
});
