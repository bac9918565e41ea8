/**
 * Candidates by probability, largest first, equal ones by lower id: what the stable comparator
 * sort `(a, b) => probs[b] - probs[a] || a - b` gives, without its cost over a whole vocabulary.
 *
 * An LSD radix sort on the f32 bit patterns: a non-negative float's bits order it as an integer,
 * so sorting `+Infinity's bits - bits` ascending puts the largest first, and stable passes keep
 * ties in the order they came in, which is id order once the ids have been sorted first. The
 * scratch arrays live across calls (the sampler runs on one thread, one call at a time).
 */

/** Below this many candidates the comparator sort is as fast as the passes' fixed cost. */
const SMALL = 128;
const POS_INF = 0x7f800000;
/** The widest digit: 2^16 buckets. */
const MAX_DIGIT_BITS = 16;

let keys = new Int32Array(0);
let vals = new Int32Array(0);
let keysOut = new Int32Array(0);
let valsOut = new Int32Array(0);
let counts = new Int32Array(0);

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
  let or = 0;
  let and = -1;
  for (let i = 0; i < n; i++) {
    const b = bits[vals[i]!]!;
    // A negative (-0 included: the sign bit makes b < 0) or NaN probability has no such order;
    // leave it to the comparator.
    if (b < 0 || b > POS_INF) return comparatorOrder(probs, cand);
    const key = POS_INF - b;
    keys[i] = key;
    or |= key;
    and &= key;
  }
  // Bits above the highest one that differs are shared by every key: no pass needs them.
  sortPairs(n, 32 - Math.clz32(or ^ and));
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

/** A guess at `passes` passes' cost over `span` bits: a scatter of n pairs and a scan of the buckets each. */
function passCost(n: number, span: number, passes: number): number {
  const width = Math.ceil(span / passes);
  return width > MAX_DIGIT_BITS ? Infinity : passes * (3 * n + (1 << width));
}

/**
 * Stable sort of `vals` by `keys` (non-negative, below 2^span) over the first `n`: every digit's
 * histogram in one read, then one scatter per digit. Leaves the result in `keys` / `vals`.
 */
function sortPairs(n: number, span: number): void {
  if (span === 0) return;
  let passes = 1;
  for (let p = 2; p <= 4; p++) if (passCost(n, span, p) < passCost(n, span, passes)) passes = p;
  const width = Math.ceil(span / passes);
  const buckets = 1 << width;
  const mask = buckets - 1;
  if (counts.length < passes * buckets) counts = new Int32Array(passes * buckets);
  // Locals, not the module's bindings, in the hot loops.
  let k = keys, v = vals, kOut = keysOut, vOut = valsOut;
  const c = counts;
  c.fill(0, 0, passes * buckets);
  for (let i = 0; i < n; i++) {
    const key = k[i]!;
    for (let d = 0; d < passes; d++) c[d * buckets + ((key >>> (d * width)) & mask)]!++;
  }
  for (let d = 0; d < passes; d++) {
    const shift = d * width;
    const base = d * buckets;
    let sum = 0;
    for (let b = base; b < base + buckets; b++) {
      const count = c[b]!;
      c[b] = sum;
      sum += count;
    }
    for (let i = 0; i < n; i++) {
      const key = k[i]!;
      const at = c[base + ((key >>> shift) & mask)]!++;
      kOut[at] = key;
      vOut[at] = v[i]!;
    }
    [k, kOut] = [kOut, k];
    [v, vOut] = [vOut, v];
  }
  keys = k; vals = v; keysOut = kOut; valsOut = vOut;
}
