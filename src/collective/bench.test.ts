import { describe, expect, it } from 'vitest';
import { DIRECT_BLOCK_FLOATS, DIRECT_BLOCKED_MIN } from './all-reduce.js';
import { copyThroughSlot } from './bench.js';
import { firstBitDifference, randomFloats } from './testing/data.js';

// The copy floor of `bench allreduce` must time the whole copy, or it is no floor.
describe('copyThroughSlot (the copy floor of bench allreduce)', () => {
  const lengths = [1, 5, DIRECT_BLOCKED_MIN - 1, DIRECT_BLOCKED_MIN, DIRECT_BLOCKED_MIN + 7, 4 * DIRECT_BLOCKED_MIN + DIRECT_BLOCK_FLOATS / 2];
  for (const len of lengths) {
    for (const inPlace of [false, true]) {
      it(`copies ${len} floats ${inPlace ? 'in place' : 'to another array'} by way of the slot`, () => {
        const input = randomFloats(len, 3, 0);
        const expected = input.slice();
        const slot = new Float32Array(new SharedArrayBuffer(len * 4 + 64));
        const out = inPlace ? input : new Float32Array(len).fill(Number.NaN);
        copyThroughSlot(input, slot, out);
        expect(firstBitDifference(out, expected)).toBe(-1);
        // Every block passed through the slot: its areas hold input values, not zeros.
        expect(slot.subarray(0, Math.min(len, DIRECT_BLOCK_FLOATS)).some((x) => x !== 0)).toBe(true);
      });
    }
  }
});
