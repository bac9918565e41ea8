import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
// @ts-expect-error: a plain .mjs build script, without types
import { compileWat } from '../../../scripts/build-wasm.mjs';
import { DOT_PEAK_RELAXED_WASM_BASE64, DOT_PEAK_WASM_BASE64 } from './dot-peak-wasm.js';

setFlagsFromString('--experimental-wasm-relaxed-simd');
type Peak = (turns: number, seed: number) => number;

/** Lane 0 of the ten chains' sum, each chain a ← dot(a, 3s) + seed in `bits`-bit lanes of pairs of bits/2-bit halves. */
function want(turns: number, seed: number, bits: 16 | 32): number {
  const half = bits / 2;
  const wrap = (v: number, b: number) => (b === 32 ? v | 0 : (v << (32 - b)) >> (32 - b));
  // Lane 0 of chain i starts as the low `bits` bits of seed + i.
  const chains = Array.from({ length: 10 }, (_, i) => wrap(seed + i, bits));
  for (let t = 0; t < turns; t++) {
    for (let i = 0; i < 10; i++) {
      const a = chains[i]!;
      chains[i] = wrap(3 * wrap(a, half) + 3 * wrap(a >> half, half) + seed, bits);
    }
  }
  return chains.reduce((a, b) => wrap(a + b, bits), 0);
}

describe('the integer dot peak loops (dot-peak.wat)', () => {
  it.each([['simd', DOT_PEAK_WASM_BASE64], ['relaxed', DOT_PEAK_RELAXED_WASM_BASE64]])(
    'the committed %s bytes are the compiled dot-peak.wat, and each turn is ten chained dots then adds', async (variant, committed) => {
      const bytes: Buffer = await compileWat(fileURLToPath(new URL('./dot-peak.wat', import.meta.url)), variant);
      expect(bytes.toString('base64')).toBe(committed);
      const ex = new WebAssembly.Instance(new WebAssembly.Module(new Uint8Array(bytes)), {}).exports as Record<string, Peak>;
      expect(ex.dotI16!(0, 2)).toBe(65);
      expect(ex.dotI16!(3, 2)).toBe(want(3, 2, 32));
      expect(ex.dotI16!(3, -70000)).toBe(want(3, -70000, 32));
      if (variant === 'simd') expect(ex.dotI8).toBeUndefined();
      else expect(ex.dotI8!(3, 2)).toBe(want(3, 2, 16));
    });
});
