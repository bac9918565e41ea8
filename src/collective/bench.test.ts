import { describe, expect, it } from 'vitest';
import { copyThroughSlot } from './bench.js';
import { firstBitDifference, randomFloats } from '../../test-support/collective/data.js';

/** An output that records which elements `set` wrote, so an in-place copy cannot pass by doing nothing. */
class Recording extends Float32Array {
  readonly written = new Uint8Array(this.length);
  override set(src: ArrayLike<number>, offset = 0): void {
    this.written.fill(1, offset, offset + src.length);
    super.set(src, offset);
  }
}

// The copy floor of `bench allreduce` must time the whole copy, through the slot, or it is no floor.
describe('copyThroughSlot (the copy floor of bench allreduce)', () => {
  for (const len of [1, 5, 262_143, 1_048_576 + 7]) {
    for (const inPlace of [false, true]) {
      it(`copies ${len} floats ${inPlace ? 'in place' : 'to another array'} by way of the slot`, () => {
        const expected = randomFloats(len, 3, 0);
        const input = new Recording(len);
        input.set(expected);
        input.written.fill(0);
        const slot = new Float32Array(new SharedArrayBuffer(len * 4 + 64));
        const out = inPlace ? input : new Recording(len).fill(Number.NaN);
        copyThroughSlot(input, slot, out);
        expect(firstBitDifference(out, expected)).toBe(-1);
        expect((out as Recording).written.every((w) => w === 1)).toBe(true);
        expect(firstBitDifference(slot.subarray(0, len), expected)).toBe(-1);
      });
    }
  }
});
