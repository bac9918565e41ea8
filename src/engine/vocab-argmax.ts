/**
 * A greedy step's pick without moving the logits: each rank reduces its vocabulary slice of every
 * wanted row to its best (value, id), and the main thread picks among the ranks' bests. Both
 * halves keep `argmax`'s rule (the first largest, so ties go to the lower id): a rank scans its
 * slice with it, and among the ranks' bests a tie goes to the lower id too.
 */
import { argmax } from '../model/reference.js';

/** Floats a rank writes per wanted row: its best value, then that token's id (exact in f32 below 2^24). */
export const BEST_FLOATS = 2;

/**
 * Rank side: the best of each of `rows` rows of `logits` (rows × n, this rank's slice starting at
 * token `first`) into `out` (rows × BEST_FLOATS).
 */
export function sliceBests(logits: Float32Array, rows: number, n: number, first: number, out: Float32Array): void {
  for (let j = 0; j < rows; j++) {
    const i = argmax(logits.subarray(j * n, (j + 1) * n), n);
    out[j * BEST_FLOATS] = logits[j * n + i]!;
    out[j * BEST_FLOATS + 1] = first + i;
  }
}

/** Main thread: row j's token from the bests of every rank (`bestsOf(r)`, r < world). */
export function pickBest(bestsOf: (rank: number) => Float32Array, world: number, j: number): number {
  const at = j * BEST_FLOATS;
  let value = -Infinity;
  let token = -1;
  for (let r = 0; r < world; r++) {
    const b = bestsOf(r);
    const v = b[at]!;
    const t = b[at + 1]!;
    if (token < 0 || v > value || (v === value && t < token)) [value, token] = [v, t];
  }
  return token;
}
