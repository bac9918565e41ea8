/**
 * run.c's sampler, bit for bit: xorshift64* RNG, temperature, softmax, multinomial or top-p.
 *
 * Every rank runs its own copy on the same all-gathered logits with the same seed, so the
 * sampled token is identical everywhere without a broadcast. That only holds if this code is
 * deterministic to the bit, hence f32 emulation (Math.fround) where run.c uses float.
 */
import { InvalidArgumentError } from '../errors.js';
import { argmax, softmax } from './reference.js';

const f = Math.fround;
const MASK64 = (1n << 64n) - 1n;

/** run.c's `random_u32`: xorshift on a u64 state, then the high 32 bits of state * 0x2545F4914F6CDD1D. */
export function randomU32(rng: { state: bigint }): number {
  let s = rng.state;
  s ^= s >> 12n;
  s = (s ^ (s << 25n)) & MASK64;
  s ^= s >> 27n;
  rng.state = s;
  return Number(((s * 0x2545f4914f6cdd1dn) & MASK64) >> 32n);
}

/** run.c's `random_f32`: a float in [0, 1) with 24 random bits (exact in f32). */
export function randomF32(rng: { state: bigint }): number {
  return (randomU32(rng) >>> 8) / 16777216;
}

/**
 * run.c seeds with `time(NULL)` when the seed is 0 or negative. Resolve it once (on the main
 * thread) and hand the same value to every rank.
 */
export function resolveSeed(seed?: number | bigint): bigint {
  if (seed === undefined || seed <= 0) return BigInt(Math.floor(Date.now() / 1000));
  if (typeof seed === 'number' && !Number.isSafeInteger(seed)) {
    throw new InvalidArgumentError(`seed must be an integer, got ${seed}`, 'Pass a positive integer seed');
  }
  return BigInt(seed) & MASK64;
}

/** run.c's `sample_mult`: the first index whose running f32 CDF exceeds coin. */
export function sampleMult(probabilities: Float32Array, n: number, coin: number): number {
  let cdf = 0;
  for (let i = 0; i < n; i++) {
    cdf = f(cdf + probabilities[i]!);
    if (coin < cdf) return i;
  }
  return n - 1; // rounding: the CDF never reached coin
}

/**
 * run.c's `sample_topp`: keep tokens with p >= (1 - topp) / (n - 1), sort descending, cut after
 * the cumulative probability first exceeds topp, then sample with r = coin * cumulative.
 * run.c uses qsort, which is not stable; this sort is stable (ties keep index order). Ties of
 * exactly equal f32 probabilities at the cut are rare enough not to matter in practice.
 */
export function sampleTopp(probabilities: Float32Array, n: number, topp: number, coin: number): number {
  const toppF = f(topp);
  const cutoff = f(f(1 - toppF) / (n - 1));
  const candidates: { prob: number; index: number }[] = [];
  for (let i = 0; i < n; i++) {
    if (probabilities[i]! >= cutoff) candidates.push({ prob: probabilities[i]!, index: i });
  }
  candidates.sort((a, b) => b.prob - a.prob);

  let cumulative = 0;
  let last = candidates.length - 1; // rounding: consider all if topp is never exceeded
  for (let i = 0; i < candidates.length; i++) {
    cumulative = f(cumulative + candidates[i]!.prob);
    if (cumulative > toppF) {
      last = i;
      break;
    }
  }

  const r = f(coin * cumulative);
  let cdf = 0;
  for (let i = 0; i <= last; i++) {
    cdf = f(cdf + candidates[i]!.prob);
    if (r < cdf) return candidates[i]!.index;
  }
  return candidates[last]!.index;
}

export interface SamplerOptions {
  /** 0 = greedy. run.c clamps negatives to 0. */
  temperature: number;
  /** Top-p; <= 0 or >= 1 samples from the whole distribution. run.c resets values outside [0, 1] to 0.9. */
  topp: number;
  /** run.c's `rng_seed`; see `resolveSeed`. */
  seed: number | bigint;
}

export class Sampler {
  readonly vocabSize: number;
  readonly temperature: number;
  readonly topp: number;
  /** The u64 RNG state; exposed so a rank can be checked or rebuilt mid-generation. */
  readonly rng: { state: bigint };

  constructor(vocabSize: number, opts: SamplerOptions) {
    if (Number.isNaN(opts.temperature) || Number.isNaN(opts.topp)) {
      throw new InvalidArgumentError(`temperature and topp must be numbers, got ${opts.temperature} and ${opts.topp}`);
    }
    this.vocabSize = vocabSize;
    // run.c's main() clamps the same way
    this.temperature = opts.temperature < 0 ? 0 : opts.temperature;
    this.topp = opts.topp < 0 || opts.topp > 1 ? 0.9 : opts.topp;
    this.rng = { state: resolveSeed(opts.seed) };
  }

  /** Picks the next token. Like run.c, it overwrites `logits` with probabilities when temperature > 0. */
  sample(logits: Float32Array): number {
    const n = this.vocabSize;
    if (f(this.temperature) === 0) return argmax(logits, n);
    const t = f(this.temperature);
    for (let i = 0; i < n; i++) logits[i] = f(logits[i]! / t);
    softmax(logits, 0, n);
    // one coin per sample, drawn before choosing the method, as run.c
    const coin = randomF32(this.rng);
    if (this.topp <= 0 || this.topp >= 1) return sampleMult(logits, n, coin);
    return sampleTopp(logits, n, this.topp, coin);
  }
}
