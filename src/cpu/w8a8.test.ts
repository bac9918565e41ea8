import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: a plain .mjs build script, without types
import { compileWat } from '../../scripts/build-wasm.mjs';
import { W8A8_WASM_BASE64 } from './w8a8-wasm.js';
import { W8A8Matmul, type W8A8Operand } from './w8a8.js';
import { CpuKernels } from './kernels.js';
import { matmulQ8, quantizeQ8, type Q8Tensor } from '../model/reference-q8.js';
import { mulberry32 } from '../model/mulberry32.js';

const f = Math.fround;

/** A random (rows, k) tensor quantised as runq.c does, with groups of wide and narrow ranges. */
function tensor(rows: number, k: number, gs: number, seed: number): Q8Tensor {
  const r = mulberry32(seed);
  const x = Float32Array.from({ length: rows * k }, (_, i) => (2 * r() - 1) * (1 + 30 * (Math.floor(i / gs) % 3)));
  return quantizeQ8(x, rows * k, gs);
}

function put(kn: CpuKernels, t: Q8Tensor): W8A8Operand {
  const copy = (v: Int8Array | Float32Array): number => {
    const at = kn.alloc(v.byteLength);
    new Uint8Array(kn.memory.buffer, at, v.byteLength).set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
    return at;
  };
  return { q: copy(t.q), s: copy(t.s) };
}

/** runq.c's matmul of each row of x (the oracle's `matmulQ8`, one row at a time). */
function oracle(x: Q8Tensor, w: Q8Tensor, m: number, k: number, n: number, gs: number): Float32Array {
  const y = new Float32Array(m * n);
  for (let r = 0; r < m; r++) {
    const row = { q: x.q.subarray(r * k, (r + 1) * k), s: x.s.subarray((r * k) / gs, ((r + 1) * k) / gs) };
    matmulQ8(y.subarray(r * n, (r + 1) * n), row, w, k, n, gs);
  }
  return y;
}

describe('W8A8 matmul (w8a8.wat)', () => {
  it('is built from its WAT', async () => {
    const bytes = await compileWat(fileURLToPath(new URL('./w8a8.wat', import.meta.url)));
    expect(bytes.toString('base64')).toBe(W8A8_WASM_BASE64);
  });

  const cases = [
    { m: 1, k: 64, n: 65, gs: 4 }, { m: 3, k: 172, n: 33, gs: 4 }, { m: 5, k: 96, n: 7, gs: 32 },
    { m: 2, k: 1024, n: 3, gs: 32 }, { m: 4, k: 36, n: 9, gs: 12 }, { m: 1, k: 64, n: 512, gs: 64 },
  ];
  for (const { m, k, n, gs } of cases) {
    it(`gives runq.c's sums to the bit: m ${m}, k ${k}, n ${n}, groups of ${gs}; += and chained`, () => {
      const x = tensor(m, k, gs, m * 7 + k);
      const w = tensor(n, k, gs, n * 13 + k);
      const want = oracle(x, w, m, k, n, gs);
      const kn = CpuKernels.create();
      const mm = W8A8Matmul.on(kn);
      const xa = put(kn, x);
      const wa = put(kn, w);
      const y = kn.alloc(m * n * 4);
      mm.run({ y, x: xa, w: wa, m, k, n, groupSize: gs, into: 'set' });
      expect(Array.from(kn.f32(y, m * n))).toEqual(Array.from(want));

      // += : the sum from zero, then added (runq.c's x[i] += xb[i]).
      const base = Float32Array.from({ length: m * n }, (_, i) => (i % 5) - 2.3);
      kn.f32(y, m * n).set(base);
      mm.run({ y, x: xa, w: wa, m, k, n, groupSize: gs, into: 'add' });
      expect(Array.from(kn.f32(y, m * n))).toEqual(Array.from(base, (b, i) => f(b + want[i]!)));

      // Two ranks' columns, the second continuing the first's sums: the one sequential sum.
      const cut = gs * Math.floor(k / gs / 2);
      if (cut === 0) return;
      const part = (from: number, to: number, t: Q8Tensor, rows: number): Q8Tensor => ({
        q: Int8Array.from({ length: rows * (to - from) }, (_, i) => t.q[Math.floor(i / (to - from)) * k + from + (i % (to - from))]!),
        s: Float32Array.from({ length: (rows * (to - from)) / gs }, (_, i) => t.s[(Math.floor(i / ((to - from) / gs)) * k + from) / gs + (i % ((to - from) / gs))]!),
      });
      mm.run({ y, x: put(kn, part(0, cut, x, m)), w: put(kn, part(0, cut, w, n)), m, k: cut, n, groupSize: gs, into: 'set' });
      mm.run({ y, x: put(kn, part(cut, k, x, m)), w: put(kn, part(cut, k, w, n)), m, k: k - cut, n, groupSize: gs, into: 'continue' });
      expect(Array.from(kn.f32(y, m * n))).toEqual(Array.from(want));
    });
  }

  it('multiplies int8 by int8 exactly at the extremes (-128 · -128 in every lane)', () => {
    const k = 32;
    const x: Q8Tensor = { q: new Int8Array(k).fill(-128), s: new Float32Array(1).fill(1) };
    const w: Q8Tensor = { q: new Int8Array(k).fill(-128), s: new Float32Array(1).fill(1) };
    const kn = CpuKernels.create();
    const y = kn.alloc(4);
    W8A8Matmul.on(kn).run({ y, x: put(kn, x), w: put(kn, w), m: 1, k, n: 1, groupSize: k, into: 'set' });
    expect(kn.f32(y, 1)[0]).toBe(32 * 128 * 128);
  });

  it('rejects a group size that is not a multiple of 4 with a typed error', () => {
    const mm = W8A8Matmul.on(CpuKernels.create());
    expect(() => mm.run({ y: 16, x: { q: 16, s: 16 }, w: { q: 16, s: 16 }, m: 1, k: 6, n: 1, groupSize: 6, into: 'set' })).toThrow(/multiple of 4/);
  });
});
