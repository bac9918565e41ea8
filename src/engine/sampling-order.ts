/**
 * Candidates by probability, largest first, equal ones by lower id: what the stable comparator
 * sort `(a, b) => probs[b] - probs[a] || a - b` gives, without its cost over a whole vocabulary.
 *
 * An LSD radix sort on the f32 bit patterns: a non-negative float's bits order it as an integer,
 * so sorting `+Infinity's bits - bits` ascending puts the largest first, and stable passes keep
 * ties in the order they came in, which is id order once the ids have been sorted first. The
 * scratch arrays live across calls (the sampler runs on one thread, one call at a time).
 */

const DIGIT_BITS = 11;
const BUCKETS = 1 << DIGIT_BITS;
const MASK = BUCKETS - 1;
/** Digits of a 31-bit key (ids, and 0x7f800000 - bits, which keeps every key non-negative). */
const MAX_DIGITS = Math.ceil(31 / DIGIT_BITS);
/** Below this many candidates the comparator sort is as fast as the passes' fixed cost. */
const SMALL = 128;
const POS_INF = 0x7f800000;

let keys = new Int32Array(0);
let vals = new Int32Array(0);
let keysOut = new Int32Array(0);
let valsOut = new Int32Array(0);
const counts = new Int32Array(MAX_DIGITS * BUCKETS);

/** Sorts `cand` (ids into `probs`) in place, largest probability first, and returns it. */
export function descendingOrder(probs: Float32Array, cand: number[]): number[] {
  const n = cand.length;
  if (n < SMALL) return comparatorOrder(probs, cand);
  const bits = new Int32Array(probs.buffer, probs.byteOffset, probs.length);
  grow(n);
  let ascending = true;
  let maxId = 0;
  for (let i = 0; i < n; i++) {
    const id = cand[i]!;
    vals[i] = id;
    if (id <= maxId && i > 0) ascending = false;
    if (id > maxId) maxId = id;
  }
  // Ties must come out by id, so unordered ids are radix-sorted by themselves first.
  if (!ascending) {
    keys.set(vals.subarray(0, n));
    sortPairs(n, 32 - Math.clz32(maxId));
  }
  for (let i = 0; i < n; i++) {
    const b = bits[vals[i]!]!;
    // A negative (-0 included: the sign bit makes b < 0) or NaN probability has no such order;
    // leave it to the comparator.
    if (b < 0 || b > POS_INF) return comparatorOrder(probs, cand);
    keys[i] = POS_INF - b;
  }
  sortPairs(n, 31);
  for (let i = 0; i < n; i++) cand[i] = vals[i]!;
  return cand;
}

function comparatorOrder(probs: Float32Array, cand: number[]): number[] {
  return cand.sort((a, b) => probs[b]! - probs[a]! || a - b);
}

function grow(n: number): void {
  if (keys.length >= n) return;
  keys = new Int32Array(n);
  vals = new Int32Array(n);
  keysOut = new Int32Array(n);
  valsOut = new Int32Array(n);
}

/**
 * Stable sort of `vals` by `keys` (non-negative, below 2^keyBits) over the first `n`: every
 * digit's histogram in one read, then one scatter per digit, skipping a digit all keys share.
 * Leaves the result in `keys` / `vals`.
 */
function sortPairs(n: number, keyBits: number): void {
  // Locals, not the module's bindings, in the hot loops.
  let k = keys, v = vals, kOut = keysOut, vOut = valsOut;
  const c = counts;
  const digits = Math.ceil(keyBits / DIGIT_BITS);
  c.fill(0);
  for (let i = 0; i < n; i++) {
    const key = k[i]!;
    for (let d = 0; d < digits; d++) c[d * BUCKETS + ((key >>> (d * DIGIT_BITS)) & MASK)]!++;
  }
  for (let d = 0; d < digits; d++) {
    const shift = d * DIGIT_BITS;
    const base = d * BUCKETS;
    if (c[base + ((k[0]! >>> shift) & MASK)] === n) continue;
    let sum = 0;
    for (let b = base; b < base + BUCKETS; b++) {
      const count = c[b]!;
      c[b] = sum;
      sum += count;
    }
    for (let i = 0; i < n; i++) {
      const key = k[i]!;
      const at = c[base + ((key >>> shift) & MASK)]!++;
      kOut[at] = key;
      vOut[at] = v[i]!;
    }
    [k, kOut] = [kOut, k];
    [v, vOut] = [vOut, v];
  }
  keys = k; vals = v; keysOut = kOut; valsOut = vOut;
}
