import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
// @ts-expect-error: a plain .mjs build script, without types
import { compileWat } from '../../scripts/build-wasm.mjs';
import { CPU_KERNELS_RELAXED_WASM_BASE64, CPU_KERNELS_WASM_BASE64 } from './kernels-wasm.js';
import { CpuKernels, relaxedSimdAvailable, type CpuKernelVariant, type CpuWeightDtype } from './kernels.js';
import { CpuMemoryError } from '../errors.js';
import * as ref from '../model/reference.js';
import { mulberry32 } from '../model/mulberry32.js';
import { matmulOracle, randoms, rowsOf, worst } from '../../test-support/cpu/kernel-checks.js';
import { f32ToF16 } from '../model/formats/gguf-blocks.js';
import { f16ToF32 } from '../model/formats/safetensors.js';

/** A weight matrix in `dtype`, and the f32 values the oracle multiplies by (the halves, widened). */
function weights(n: number, seed: number, dtype: CpuWeightDtype): { stored: Float32Array | Uint16Array; values: Float32Array } {
  const values = randoms(n, seed);
  if (dtype === 'f32') return { stored: values, values };
  const stored = Uint16Array.from(values, f32ToF16);
  return { stored, values: Float32Array.from(stored, f16ToF32) };
}

const abs = (a: Float32Array) => a.map(Math.abs);

// Node 20 has relaxed SIMD behind a flag; set before the first validation, it lets both variants run here.
setFlagsFromString('--experimental-wasm-relaxed-simd');
const variants: CpuKernelVariant[] = relaxedSimdAvailable() ? ['simd', 'relaxed'] : ['simd'];

describe('CPU kernels (WebAssembly SIMD)', () => {
  it.each([['simd', CPU_KERNELS_WASM_BASE64], ['relaxed', CPU_KERNELS_RELAXED_WASM_BASE64]])(
    'the committed %s bytes are the compiled kernels.wat (npm run build:wasm after editing it)', async (variant, committed) => {
      const bytes: Buffer = await compileWat(fileURLToPath(new URL('./kernels.wat', import.meta.url)), variant);
      expect(bytes.toString('base64')).toBe(committed);
    });

  it('runs the variant asked for, and relaxed SIMD by default where the engine has it', () => {
    expect(CpuKernels.create(undefined, { variant: 'simd' }).variant).toBe('simd');
    expect(CpuKernels.create().variant).toBe(relaxedSimdAvailable() ? 'relaxed' : 'simd');
    // This suite sets Node's flag, so both builds are covered wherever the engine has it.
    expect(variants).toContain('relaxed');
  });

  // k: below 8, an 8-multiple tail, past 16 with tails of 1..7; n: short last blocks of 1..3 rows;
  // m = 1 is the gemv, 3/5 a pair then one, 8 four pairs.
  describe.each(variants.flatMap((v) => (['f32', 'f16'] as const).map((d) => [v, d] as const)))(
    'matmul (%s), %s weights in rows', (variant, dtype) => {
      it.each([
        [1, 1, 1], [1, 3, 5], [1, 17, 7], [1, 45, 13], [1, 64, 9], [1, 131, 33],
        [3, 1, 2], [3, 7, 5], [3, 45, 13], [4, 33, 6], [5, 131, 19], [8, 20, 3], [8, 77, 10], [2, 16, 4],
      ])('m %i, k %i, n %i: y = x·wᵀ, then accumulated with a bias, against the oracle', (m, k, n) => {
        const xStride = k + 3; // rows of a wider buffer, as the siluMul halves of h13 are read
        const xData = randoms(m * xStride, 1);
        const x = rowsOf(xData, m, k, xStride);
        const w = weights(n * k, 2, dtype);
        const bias = randoms(n, 3);
        const y0 = randoms(m * n, 4);
        const { want, mag } = matmulOracle(x, w.values, m, k, n);

        const kn = CpuKernels.create(undefined, { variant });
        const [xp, bp, yp] = [kn.put(xData), kn.put(bias), kn.put(new Float32Array(m * n))];
        const wp = kn.put(w.stored);
        kn.matmul({ y: yp, x: xp, xStride, w: wp, dtype, m, k, n });
        const got = kn.f32(yp, m * n).slice();
        expect(worst(got, want, mag)).toBeLessThanOrEqual(1);
        // The same bits on every call.
        kn.matmul({ y: yp, x: xp, xStride, w: wp, dtype, m, k, n });
        expect(Array.from(kn.f32(yp, m * n))).toEqual(Array.from(got));

        // The row-parallel form: y0 + (x·wᵀ + bias).
        kn.f32(yp, m * n).set(y0);
        kn.matmul({ y: yp, x: xp, xStride, w: wp, dtype, m, k, n, accumulate: true, bias: bp });
        const acc = want.map((v, i) => Math.fround(y0[i]! + Math.fround(v + bias[i % n]!)));
        const accMag = mag.map((v, i) => v + Math.abs(bias[i % n]!) + Math.abs(y0[i]!));
        expect(worst(kn.f32(yp, m * n), acc, accMag)).toBeLessThanOrEqual(1);
      });
    });

  // n spans several of the runs a batch of four or more rows touches ahead (48 KB each), and the
  // matrix ends at the memory's last byte, so a touch past it would trap; k: all tail, eights and a tail.
  describe.each(variants.flatMap((v) => (['f32', 'f16'] as const).map((d) => [v, d] as const)))(
    'matmul (%s), %s weights in rows, many runs of rows', (variant, dtype) => {
      it.each([5, 21])('k %i: each of 1..9 input rows gets the bits it gets alone, and the oracle\'s sums', (k) => {
        const [n, maxM] = [2403, 9];
        const x = randoms(maxM * k, 31);
        const w = weights(n * k, 32, dtype);
        const kn = CpuKernels.create(undefined, { variant });
        const [xp, yp, y1] = [kn.put(x), kn.alloc(maxM * n * 4), kn.alloc(n * 4)];
        const wBytes = w.stored.byteLength;
        const mark = kn.mark();
        kn.alloc(wBytes); // grows the memory to hold them, then pads so that they end where it does
        kn.release(mark);
        kn.alloc(kn.memory.buffer.byteLength - mark - Math.ceil(wBytes / 16) * 16);
        const wp = kn.alloc(wBytes);
        expect(Math.ceil((wp + wBytes) / 16) * 16).toBe(kn.memory.buffer.byteLength);
        new Uint8Array(kn.memory.buffer, wp, wBytes).set(new Uint8Array(w.stored.buffer, w.stored.byteOffset, wBytes));
        const alone = new Float32Array(maxM * n);
        for (let r = 0; r < maxM; r++) {
          kn.matmul({ y: y1, x: xp + r * k * 4, w: wp, dtype, m: 1, k, n });
          alone.set(kn.f32(y1, n), r * n);
        }
        const { want, mag } = matmulOracle(x, w.values, maxM, k, n);
        expect(worst(alone, want, mag)).toBeLessThanOrEqual(1);
        for (let m = 2; m <= maxM; m++) {
          kn.f32(yp, m * n).fill(NaN);
          kn.matmul({ y: yp, x: xp, w: wp, dtype, m, k, n });
          expect(Array.from(kn.f32(yp, m * n))).toEqual(Array.from(alone.subarray(0, m * n)));
        }
      });
    });

  it('f16 matmul widens subnormal, zero and extreme finite halves exactly', () => {
    // One weight row of every finite non-negative/negative half class against x = 1 at one position each.
    const halves = Uint16Array.of(0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x7bff, 0xfbff, 0x3c00, 0x3555);
    const k = halves.length;
    const kn = CpuKernels.create();
    const [wp, yp] = [kn.put(halves), kn.alloc(k * 4)];
    for (let j = 0; j < k; j++) {
      const xp = kn.put(Float32Array.from({ length: k }, (_, i) => (i === j ? 1 : 0)));
      kn.matmul({ y: yp, x: xp, w: wp, dtype: 'f16', m: 1, k, n: 1 });
      expect(Object.is(kn.f32(yp, 1)[0]! + 0, f16ToF32(halves[j]!) + 0)).toBe(true);
    }
  });

  it('widens every half as the loader does (normals, subnormals, ±0, ±inf, NaN), in SIMD and its tail', () => {
    const dim = 65536 + 5; // the last five go through the scalar tail
    const halves = Uint16Array.from({ length: dim }, (_, i) => i % 65536);
    const kn = CpuKernels.create();
    const table = kn.put(halves);
    const tokens = kn.put(Int32Array.of(0));
    const y = kn.alloc(dim * 4);
    kn.embed(y, table, tokens, 1, dim, 'f16');
    const got = kn.f32(y, dim);
    const bad = Array.from(halves).findIndex((h, i) => !Object.is(got[i], f16ToF32(h)));
    expect(bad).toBe(-1);
  });

  it.each(['f32', 'f16'] as const)('embed, %s table: rows of odd width for each token', (dtype) => {
    const [vocab, dim] = [11, 21];
    const t = weights(vocab * dim, 5, dtype);
    const tokens = Int32Array.of(3, 0, 10, 3);
    const want = new Float32Array(tokens.length * dim);
    ref.embed(want, t.values, tokens, dim);
    const kn = CpuKernels.create();
    const [tp, kp, yp] = [kn.put(t.stored), kn.put(tokens), kn.alloc(want.byteLength)];
    kn.embed(yp, tp, kp, tokens.length, dim, dtype);
    expect(Array.from(kn.f32(yp, want.length))).toEqual(Array.from(want));
  });

  it.each([[1, 1], [1, 7], [3, 19], [2, 64], [3, 67]])('rmsnorm, m %i, dim %i, into another buffer and in place', (m, dim) => {
    const x = randoms(m * dim, 6);
    const g = randoms(dim, 7);
    const want = new Float32Array(m * dim);
    ref.rmsnorm(want, x, g, m, dim, 1e-5);
    // Each output is g·s·x with s = 1/√(mean x² + eps): its magnitude is |want| (s is a sum of squares, no cancellation).
    const mag = abs(want);
    const kn = CpuKernels.create();
    const [xp, gp, yp] = [kn.put(x), kn.put(g), kn.alloc(x.byteLength)];
    kn.rmsnorm(yp, xp, gp, m, dim, 1e-5);
    expect(worst(kn.f32(yp, m * dim), want, mag)).toBeLessThanOrEqual(1);
    kn.rmsnorm(xp, xp, gp, m, dim, 1e-5);
    expect(worst(kn.f32(xp, m * dim), want, mag)).toBeLessThanOrEqual(1);
  });

  it.each([1, 3, 7, 18])('add and siluMul over %i floats: bitwise the oracle', (n) => {
    const [a, b, y] = [randoms(n, 8).map((v) => 6 * v), randoms(n, 9), randoms(n, 10)];
    const kn = CpuKernels.create();
    const [ap, bp, yp] = [kn.put(a), kn.put(b), kn.put(y)];
    const sum = y.slice();
    ref.add(sum, a, n);
    kn.add(yp, ap, n);
    expect(Array.from(kn.f32(yp, n))).toEqual(Array.from(sum));
    const silu = new Float32Array(n);
    ref.siluMul(silu, a, b, n);
    kn.siluMul(yp, ap, bp, n, 1);
    expect(Array.from(kn.f32(yp, n))).toEqual(Array.from(silu));
  });

  it('siluMul over the [h1 | h3] halves of 3 rows: bitwise the oracle, row by row', () => {
    const [m, n] = [3, 13];
    const h13 = randoms(m * 2 * n, 11).map((v) => 5 * v);
    const want = new Float32Array(m * n);
    for (let r = 0; r < m; r++) ref.siluMul(want.subarray(r * n), h13.subarray(r * 2 * n), h13.subarray(r * 2 * n + n), n);
    const kn = CpuKernels.create();
    const [hp, yp] = [kn.put(h13), kn.alloc(m * n * 4)];
    kn.siluMul(yp, hp, hp + n * 4, n, m, 2 * n);
    expect(Array.from(kn.f32(yp, m * n))).toEqual(Array.from(want));
  });

  it.each(['interleaved', 'rotate_half'] as const)('rope (%s) on q and k heads of 3 rows, from ropeTables: bitwise the oracle', (style) => {
    const [m, nHeads, nKv, hs, seq] = [3, 3, 1, 10, 9];
    const qDim = nHeads * hs;
    const stride = qDim + 2 * nKv * hs; // a qkv row
    const qkv = randoms(m * stride, 12);
    const positions = Int32Array.of(0, 4, 8);
    const tables = ropeTables(hs, seq);
    const q = Float32Array.from({ length: m * qDim }, (_, i) => qkv[Math.floor(i / qDim) * stride + (i % qDim)]!);
    const k = Float32Array.from({ length: m * nKv * hs }, (_, i) => qkv[Math.floor(i / (nKv * hs)) * stride + qDim + (i % (nKv * hs))]!);
    ref.rope(q, m, nHeads, hs, positions, tables, style);
    ref.rope(k, m, nKv, hs, positions, tables, style);
    const kn = CpuKernels.create();
    const [xp, cp, sp, pp] = [kn.put(qkv), kn.put(tables.cos), kn.put(tables.sin), kn.put(positions)];
    kn.rope(xp, stride, nHeads, hs, cp, sp, pp, m, style);
    kn.rope(xp + qDim * 4, stride, nKv, hs, cp, sp, pp, m, style);
    const got = kn.f32(xp, m * stride);
    for (let r = 0; r < m; r++) {
      expect(Array.from(got.subarray(r * stride, r * stride + qDim))).toEqual(Array.from(q.subarray(r * qDim, (r + 1) * qDim)));
      expect(Array.from(got.subarray(r * stride + qDim, r * stride + qDim + nKv * hs))).toEqual(Array.from(k.subarray(r * nKv * hs, (r + 1) * nKv * hs)));
      // v is left as it was
      expect(Array.from(got.subarray(r * stride + qDim + nKv * hs, (r + 1) * stride))).toEqual(Array.from(qkv.subarray(r * stride + qDim + nKv * hs, (r + 1) * stride)));
    }
  });

  // GQA (6 query heads on 2 kv heads) with odd head sizes; 3 rows in 2 slots; the offset case is a
  // rank whose heads start inside a kv group (kvMul 3, first head 1 of the model's group 0).
  const heads = [
    { hs: 7, nHeads: 6, nKv: 2, headOffset: 0 },
    { hs: 18, nHeads: 6, nKv: 2, headOffset: 0 },
    { hs: 5, nHeads: 4, nKv: 2, headOffset: 1 },
    { hs: 16, nHeads: 1, nKv: 1, headOffset: 0 },
  ];
  describe.each(variants.flatMap((v) => (['f32', 'f16'] as const).map((kv) => [v, kv] as const)))('kvWrite + attention (%s), %s cache', (variant, kvDtype) => {
    it.each(heads)('head size $hs, $nHeads heads on $nKv kv heads, offset $headOffset', ({ hs, nHeads, nKv, headOffset }) => {
      const kvMul = 3;
      const [maxSeq, nSlots, m] = [11, 2, 3];
      const kvDim = nKv * hs;
      const qDim = nHeads * hs;
      const stride = qDim + 2 * kvDim;
      const slots = Int32Array.of(1, 0, 1);
      const positions = Int32Array.of(9, 4, 10); // slot 1 at 9 and 10: the third row sees the second's k, v
      const kn = CpuKernels.create(undefined, { variant });
      const cacheFloats = nSlots * nKv * maxSeq * hs;
      // A cache as stored, and its values as floats.
      const stored = (v: Float32Array) => (kvDtype === 'f16' ? Uint16Array.from(v, f32ToF16) : v);
      const values = (at: number) => (kvDtype === 'f16' ? Float32Array.from(kn.u16(at, cacheFloats), f16ToF32) : kn.f32(at, cacheFloats).slice());
      const rounded = (v: Float32Array) => (kvDtype === 'f16' ? v.map((x) => f16ToF32(f32ToF16(x))) : v);
      const [kc, vc] = [kn.put(stored(randoms(cacheFloats, 13))), kn.put(stored(randoms(cacheFloats, 14)))];
      const qkv = randoms(m * stride, 15).map((x) => 3 * x);
      const [qp, pp, sp, op] = [kn.put(qkv), kn.put(positions), kn.put(slots), kn.alloc(m * qDim * 4)];
      kn.kvWrite(qp + qDim * 4, stride, nKv, hs, pp, sp, m, kc, maxSeq, kvDtype);
      kn.kvWrite(qp + (qDim + kvDim) * 4, stride, nKv, hs, pp, sp, m, vc, maxSeq, kvDtype);
      kn.attention({ out: op, q: qp, qStride: stride, k: kc, v: vc, kvDtype, maxSeq, nKv, positions: pp, slots: sp, m, nHeads, headSize: hs, kvMul, headOffset });

      // Each row's k and v land at its slot and position (as halves rounded to nearest even, for f16), bit for bit.
      const [k, v] = [values(kc), values(vc)];
      for (let r = 0; r < m; r++) {
        const slot = slots[r]!;
        for (let g = 0; g < nKv; g++) {
          const at = ((slot * nKv + g) * maxSeq + positions[r]!) * hs;
          const row = (o: number) => Array.from(rounded(qkv.slice(r * stride + o + g * hs, r * stride + o + (g + 1) * hs)));
          expect(Array.from(k.subarray(at, at + hs))).toEqual(row(qDim));
          expect(Array.from(v.subarray(at, at + hs))).toEqual(row(qDim + kvDim));
        }
      }
      // The oracle (run.c's two-pass softmax) per row and head, over the cache's values.
      const got = kn.f32(op, m * qDim);
      const rowsOf = (c: Float32Array, slot: number, g: number) => c.slice((slot * nKv + g) * maxSeq * hs, (slot * nKv + g + 1) * maxSeq * hs);
      for (let r = 0; r < m; r++) {
        for (let h = 0; h < nHeads; h++) {
          const g = Math.floor((h + headOffset) / kvMul);
          const q = qkv.slice(r * stride + h * hs, r * stride + (h + 1) * hs);
          const [want, mag] = [new Float32Array(hs), new Float32Array(hs)];
          const [kr, vr] = [rowsOf(k, slots[r]!, g), rowsOf(v, slots[r]!, g)];
          ref.attention(want, q, kr, vr, 1, positions.subarray(r, r + 1), 1, 1, hs, hs);
          ref.attention(mag, q, kr, abs(vr), 1, positions.subarray(r, r + 1), 1, 1, hs, hs);
          expect(worst(got.subarray((r * nHeads + h) * hs, (r * nHeads + h + 1) * hs), want, mag)).toBeLessThanOrEqual(1);
        }
      }
    });
  });

  // Each head's output must be the bits it gets as the only head of a call, so no head's result
  // depends on its neighbours (a kernel that interleaves heads must keep each one's order).
  describe.each(variants.flatMap((v) => (['f32', 'f16'] as const).map((kv) => [v, kv] as const)))('attention (%s, %s cache), heads independent', (variant, kvDtype) => {
    it.each([[64, 5, 5], [18, 3, 1], [7, 4, 2]])('head size %i, %i heads on %i kv heads: each head alone gives the same bits', (hs, nHeads, nKv) => {
      const kvMul = nHeads / nKv;
      const [maxSeq, m] = [40, 2];
      const stride = (nHeads + 2 * nKv) * hs;
      const kn = CpuKernels.create(undefined, { variant });
      const cacheFloats = m * nKv * maxSeq * hs;
      const fill = (seed: number) => (kvDtype === 'f16' ? kn.put(Uint16Array.from(randoms(cacheFloats, seed), f32ToF16)) : kn.put(randoms(cacheFloats, seed)));
      const [kc, vc] = [fill(21), fill(22)];
      const q = kn.put(randoms(m * stride, 23).map((x) => 3 * x));
      const [pp, sp] = [kn.put(Int32Array.of(38, 6)), kn.put(Int32Array.of(1, 0))];
      const common = { qStride: stride, k: kc, v: vc, kvDtype, maxSeq, nKv, positions: pp, slots: sp, m, headSize: hs, kvMul };
      const all = kn.alloc(m * nHeads * hs * 4);
      kn.attention({ ...common, out: all, q, nHeads, headOffset: 0 });
      const got = kn.f32(all, m * nHeads * hs).slice();
      for (let h = 0; h < nHeads; h++) {
        // Head h alone: q and out start at its head, and headOffset h picks its kv head.
        const one = kn.alloc(m * hs * 4);
        kn.attention({ ...common, out: one, q: q + h * hs * 4, nHeads: 1, headOffset: h });
        const alone = kn.f32(one, m * hs);
        for (let r = 0; r < m; r++) {
          expect(Array.from(got.subarray((r * nHeads + h) * hs, (r * nHeads + h + 1) * hs))).toEqual(Array.from(alone.subarray(r * hs, (r + 1) * hs)));
        }
      }
    });
  });

  it('kvWrite rounds to halves as f32ToF16 does: ties to even, subnormals, overflow to inf', () => {
    const vals = Float32Array.of(0, -0, 1, -2.5, 65504, 65519.99, 65520, 1e6, -1e6, Infinity, -Infinity, 2 ** -24, 2 ** -25, 3 * 2 ** -26, 2 ** -14, 6e-8, 1 + 2 ** -11, 1 + 3 * 2 ** -11, ...randoms(40, 16).map((x) => x * 100));
    const n = vals.length;
    const kn = CpuKernels.create();
    const [src, pos, slot, cache] = [kn.put(vals), kn.put(Int32Array.of(0)), kn.put(Int32Array.of(0)), kn.alloc(n * 2)];
    kn.kvWrite(src, n, 1, n, pos, slot, 1, cache, 1, 'f16');
    expect(Array.from(kn.u16(cache, n))).toEqual(Array.from(vals, f32ToF16));
  });

  it('exp is Math.exp to the bit (special values and 200,000 random arguments)', () => {
    const kn = CpuKernels.create();
    const r = mulberry32(17);
    const xs = [0, -0, 1, -1, 0.5, Infinity, -Infinity, NaN, 709.78, 709.79, -745.1, -745.2, -708.4, 1e-9, 2 ** -30, 0.3466, 1.0397, 1.04];
    for (let i = 0; i < 200000; i++) xs.push((r() - 0.5) * 2 * [1, 10, 100, 1500][i & 3]!);
    const bad = xs.filter((x) => !Object.is(kn.exp(x), Math.exp(x)));
    expect(bad).toEqual([]);
  });

  it.each(variants)('the four-lane exp (%s) is Math.exp rounded to f32, to the bit: its branch edges, clamps, specials and every 4093rd f32', (variant) => {
    // The edges of $exp's branches (|x| = ln2/2, 1.5·ln2, 2^-28, x = 1) and of the lanes' clamp
    // (−150, 100: where f32 results are 0 and inf), with their f32 neighbours.
    const edges = [0.5 * Math.LN2, 1.5 * Math.LN2, 2 ** -28, 1, 150, 100, 103.97, 88.72, 87.3, 709.78, 745.13];
    const bits = new Uint32Array(1);
    const f = new Float32Array(bits.buffer);
    const ofBits = (b: number) => ((bits[0] = b), f[0]!);
    const near = (v: number) => [-2, -1, 0, 1, 2].map((d) => ofBits(new Uint32Array(Float32Array.of(v).buffer)[0]! + d));
    const xs = [0, -0, Infinity, -Infinity, NaN, ...edges.flatMap((v) => [...near(v), ...near(-v)])];
    for (let b = 0; b < 2 ** 32; b += 4093) xs.push(ofBits(b));
    const kn = CpuKernels.create(undefined, { variant });
    const x = Float32Array.from(xs);
    const [xp, yp] = [kn.put(x), kn.alloc(x.byteLength)];
    kn.expf(yp, xp, x.length);
    const got = kn.f32(yp, x.length);
    const bad = Array.from(x).filter((v, i) => !Object.is(got[i], Math.fround(Math.exp(v))));
    expect(bad).toEqual([]);
  });

  it('fails typed, with the bytes asked for, past one WebAssembly memory', () => {
    const kn = CpuKernels.create();
    const err = (() => {
      try {
        kn.alloc(2 ** 32);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(CpuMemoryError);
    expect((err as CpuMemoryError).code).toBe('CPU_MEMORY');
    expect((err as CpuMemoryError).bytes).toBeGreaterThanOrEqual(2 ** 32);
    expect(() => CpuKernels.create(2 ** 33)).toThrow(CpuMemoryError);
  });

  it('grows its memory for an allocation past the current size, keeping what it held', () => {
    const kn = CpuKernels.create();
    const a = kn.put(Float32Array.of(1, 2, 3));
    const before = kn.memory.buffer.byteLength;
    const b = kn.alloc(3 * 65536);
    expect(kn.memory.buffer.byteLength).toBeGreaterThan(before);
    expect(b % 16).toBe(0);
    expect(Array.from(kn.f32(a, 3))).toEqual([1, 2, 3]);
  });
});

const ropeTables = (hs: number, seq: number) => ref.ropeTables(hs, seq, 10000);
