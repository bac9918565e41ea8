import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
// @ts-expect-error: a plain .mjs build script, without types
import { compileWat } from '../../../scripts/build-wasm.mjs';
import { FMA_PEAK_RELAXED_WASM_BASE64, FMA_PEAK_WASM_BASE64 } from './fma-peak-wasm.js';

setFlagsFromString('--experimental-wasm-relaxed-simd');
const f = Math.fround;

describe('the FMA peak loop (fma-peak.wat)', () => {
  it.each([['simd', FMA_PEAK_WASM_BASE64], ['relaxed', FMA_PEAK_RELAXED_WASM_BASE64]])(
    'the committed %s bytes are the compiled fma-peak.wat, and each turn is ten chained multiply-adds', async (variant, committed) => {
      const bytes: Buffer = await compileWat(fileURLToPath(new URL('./fma-peak.wat', import.meta.url)), variant);
      expect(bytes.toString('base64')).toBe(committed);
      const peak = new WebAssembly.Instance(new WebAssembly.Module(new Uint8Array(bytes)), {}).exports.peak as (turns: number, s: number) => number;
      // Chain i starts at i and takes a ← a·0.999 + s each turn; lane 0 of their sum comes back.
      const want = (turns: number, s: number) => {
        const chains = Array.from({ length: 10 }, (_, i) => i);
        for (let t = 0; t < turns; t++) for (let i = 0; i < 10; i++) chains[i] = variant === 'simd' ? f(f(chains[i]! * f(0.999)) + f(s)) : chains[i]! * f(0.999) + f(s);
        return chains.reduce((a, b) => f(a + f(b)), 0);
      };
      expect(peak(0, 0.5)).toBe(45);
      expect(peak(3, 0.5)).toBeCloseTo(want(3, 0.5), 4);
    });
});
