import { describe, expect, it } from 'vitest';
import { DIRECT_BLOCK_FLOATS, DIRECT_BLOCKED_MIN, directBlockedLag } from './all-reduce.js';
import { copyThroughSlot } from './bench.js';
import { firstBitDifference, randomFloats } from './testing/data.js';

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
  const B = DIRECT_BLOCK_FLOATS;
  const lengths = [1, 5, DIRECT_BLOCKED_MIN - 1, DIRECT_BLOCKED_MIN, DIRECT_BLOCKED_MIN + 7, 4 * DIRECT_BLOCKED_MIN + B / 2];
  for (const len of lengths) {
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
        // Each slot area holds the last block that went through it.
        const blocked = len >= DIRECT_BLOCKED_MIN;
        const areas = blocked ? 4 * directBlockedLag(len) : 1;
        const size = blocked ? B : len;
        const nb = Math.ceil(len / size);
        for (let a = 0; a < Math.min(areas, nb); a++) {
          const j = a + areas * Math.floor((nb - 1 - a) / areas);
          const n = Math.min(size, len - j * size);
          expect(firstBitDifference(slot.subarray(a * size, a * size + n), expected.subarray(j * size, j * size + n))).toBe(-1);
        }
      });
    }
  }
});
