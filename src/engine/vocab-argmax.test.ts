import { describe, expect, it } from 'vitest';
import { argmax } from '../model/reference.js';
import { BEST_FLOATS, pickBest, sliceBests } from './vocab-argmax.js';

/** Each rank's bests of `rows` rows of `logits` (rows × vocab), split at `cuts`. */
function bests(logits: Float32Array, rows: number, vocab: number, cuts: number[]): Float32Array[] {
  const edges = [0, ...cuts, vocab];
  return edges.slice(0, -1).map((first, r) => {
    const n = edges[r + 1]! - first;
    const slice = new Float32Array(rows * n);
    for (let j = 0; j < rows; j++) slice.set(logits.subarray(j * vocab + first, j * vocab + first + n), j * n);
    const out = new Float32Array(rows * BEST_FLOATS);
    sliceBests(slice, rows, n, first, out);
    return out;
  });
}

describe('vocab-argmax: the ranks\' bests pick argmax\'s token', () => {
  it('equals argmax over the whole row on random rows with many ties, for even and uneven splits', () => {
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / 2 ** 24;
    const vocab = 101;
    const rows = 40;
    // Few distinct values, so the largest often repeats within and across slices.
    const logits = Float32Array.from({ length: rows * vocab }, () => Math.floor(rand() * 6) - 3);
    for (const cuts of [[], [50], [1], [100], [17, 60], [33, 34, 35]]) {
      const b = bests(logits, rows, vocab, cuts);
      for (let j = 0; j < rows; j++) {
        expect(pickBest((r) => b[r]!, b.length, j)).toBe(argmax(logits.subarray(j * vocab, (j + 1) * vocab), vocab));
      }
    }
  });

  it('a tie across ranks goes to the lower id, whichever rank is asked first; -Infinity rows give token 0', () => {
    const vocab = 8;
    const row = new Float32Array([0, 1, 2, 5, 5, 1, 5, 0]);
    const b = bests(row, 1, vocab, [4]);
    expect(pickBest((r) => b[r]!, 2, 0)).toBe(3);
    expect(pickBest((r) => b[1 - r]!, 2, 0)).toBe(3);
    const flat = new Float32Array(vocab).fill(-Infinity);
    const f = bests(flat, 1, vocab, [3, 6]);
    expect(pickBest((r) => f[r]!, 3, 0)).toBe(0);
  });
});
