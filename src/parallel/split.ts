/**
 * Dividing a count among ranks: evenly (sizes differ by at most 1, the first ranks get the
 * extra) or in proportion to per-rank fractions (whole blocks, largest remainder).
 */

/** A half-open range [start, end). */
export type Range = [number, number];

/** Consecutive ranges of the given sizes, starting at 0. */
export function rangesFromSizes(sizes: readonly number[]): Range[] {
  const out: Range[] = [];
  let at = 0;
  for (const s of sizes) {
    out.push([at, at + s]);
    at += s;
  }
  return out;
}

/** `total` split into `n` sizes differing by at most 1; the first `total % n` get one more. */
export function evenSizes(total: number, n: number): number[] {
  const base = Math.floor(total / n);
  const extra = total % n;
  return Array.from({ length: n }, (_, r) => base + (r < extra ? 1 : 0));
}

/**
 * `total` split in proportion to `fractions` (positive, any sum), in whole blocks of `block`
 * units; a partial last block goes to the last rank. Largest-remainder rounding, ties to the
 * lower rank, so equal fractions give `evenSizes` (for block 1).
 */
export function proportionalSizes(total: number, fractions: readonly number[], block = 1): number[] {
  const sum = fractions.reduce((a, b) => a + b, 0);
  const blocks = Math.floor(total / block);
  const quotas = fractions.map((f) => (f / sum) * blocks);
  const sizes = quotas.map(Math.floor);
  let left = blocks - sizes.reduce((a, b) => a + b, 0);
  const order = quotas.map((q, r) => ({ r, rem: q - Math.floor(q) })).sort((a, b) => b.rem - a.rem || a.r - b.r);
  for (let i = 0; left > 0; i = (i + 1) % order.length, left--) sizes[order[i]!.r]!++;
  const out = sizes.map((s) => s * block);
  out[out.length - 1]! += total - blocks * block;
  return out;
}
