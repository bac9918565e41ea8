import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: a plain .mjs build script, without types
import { compileWat } from '../../scripts/build-wasm.mjs';
import { SIMD_SUM_WASM_BASE64 } from './simd-sum-wasm.js';
import { SimdSum, simdSumAvailable } from './simd-sum.js';
import { SharedGroup } from './shared-group.js';
import { createCollectiveMemory, isMemory } from './layout.js';
import { firstBitDifference, randomFloats } from '../../test-support/collective/data.js';

function memory(floats: number): { mem: WebAssembly.Memory; buf: SharedArrayBuffer } {
  const mem = new WebAssembly.Memory({ initial: Math.ceil((floats * 4) / 65536), maximum: 1024, shared: true });
  return { mem, buf: mem.buffer as unknown as SharedArrayBuffer };
}

/** ((s0 + s1) + s2) + … rounded to float32 after each addition, over [a, b). */
function scalarSum(src: Float32Array[], a: number, b: number): Float32Array {
  const out = new Float32Array(b - a);
  for (let i = a; i < b; i++) {
    let v = src[0]![i]!;
    for (let k = 1; k < src.length; k++) v = Math.fround(v + src[k]![i]!);
    out[i - a] = v;
  }
  return out;
}

describe('SIMD sums', () => {
  it('the committed bytes are the compiled simd-sum.wat (npm run build:wasm after editing it)', async () => {
    const wat = fileURLToPath(new URL('./simd-sum.wat', import.meta.url));
    const bytes: Buffer = await compileWat(wat);
    expect(bytes.toString('base64')).toBe(SIMD_SUM_WASM_BASE64);
  });

  it('are available in Node 20 (WebAssembly SIMD and threads)', () => {
    expect(simdSumAvailable()).toBe(true);
  });

  it.each([2, 3, 4, 5, 8])('sum %i arrays bitwise like the scalar float32 loop, over odd ranges and tails', (k) => {
    const n = 1000;
    const { mem, buf } = memory((k + 1) * n + 64);
    const simd = SimdSum.attach(mem, buf)!;
    const src = Array.from({ length: k }, (_, j) => {
      const v = new Float32Array(buf, j * n * 4, n);
      v.set(randomFloats(n, 11, j));
      return v;
    });
    const dst = new Float32Array(buf, k * n * 4, n);
    // [3, 62): add2's 16-float loop three times, its 4-float loop twice, three scalar tails.
    for (const [a, b] of [[0, n], [3, 997], [3, 62], [5, 6], [8, 8], [1, 4], [2, 18]] as const) {
      dst.fill(-1);
      expect(simd.sum(dst, src, a, b)).toBe(true);
      expect(firstBitDifference(dst.subarray(a, b), scalarSum(src, a, b))).toBe(-1);
      // Outside [a, b) nothing is written.
      expect(dst.subarray(0, a).every((x) => x === -1) && dst.subarray(b).every((x) => x === -1)).toBe(true);
    }
  });

  it('sums in place into the first source', () => {
    const n = 77;
    const { mem, buf } = memory(3 * n);
    const simd = SimdSum.attach(mem, buf)!;
    const x = new Float32Array(buf, 0, n);
    const y = new Float32Array(buf, n * 4, n);
    x.set(randomFloats(n, 3, 0));
    y.set(randomFloats(n, 3, 1));
    const want = scalarSum([x, y], 0, n);
    expect(simd.sum(x, [x, y], 0, n)).toBe(true);
    expect(firstBitDifference(x, want)).toBe(-1);
  });

  it('decline arrays outside the memory, leaving them untouched', () => {
    const { mem, buf } = memory(64);
    const simd = SimdSum.attach(mem, buf)!;
    const inside = new Float32Array(buf, 0, 16);
    const outside = new Float32Array(16).fill(7);
    expect(simd.sum(outside, [inside, inside], 0, 16)).toBe(false);
    expect(simd.sum(inside, [inside, outside], 0, 16)).toBe(false);
    expect(outside.every((x) => x === 7)).toBe(true);
  });

  it('a communicator on createCollectiveMemory uses them', () => {
    const buf = createCollectiveMemory({ world: 2, slotFloats: 64 });
    expect(isMemory(buf)).toBe(true);
    expect(new SharedGroup(buf, 1).simd).toBeDefined();
  });
});
