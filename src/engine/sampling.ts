/**
 * The sampler chain, in llama.cpp's order: penalties over the last `penaltyLastN` tokens, logit
 * bias, top-k, top-p, min-p, temperature, then one draw with run.c's coin.
 *
 * Its arithmetic is run.c's (f32 emulation, one xorshift coin per sampled token, none when
 * greedy), so that with the new options at their defaults it is llama2.c's sampler bit for bit
 * at temperature 0 and 1 (the reference fixtures). Top-p and min-p act on the temperature-1
 * distribution, as llama.cpp's do; run.c tempers first, so with top-p at another temperature
 * the draws differ from run.c's.
 */
import { argmax, softmax } from '../model/reference.js';
import { randomF32, resolveSeed, sampleMult } from '../model/sampler.js';
import { topIds } from './sampling-logprobs.js';
import { descendingOrder } from './sampling-order.js';

const f = Math.fround;

/** Every sampling option, resolved (see `resolveSampling` for the defaults and ranges). */
export interface SamplingParams {
  temperature: number;
  topP: number;
  /** 0 = off. */
  topK: number;
  /** 0 = off. */
  minP: number;
  /** llama.cpp's `repeat_penalty`: 1 = off. */
  repetitionPenalty: number;
  presencePenalty: number;
  frequencyPenalty: number;
  /** Tokens (prompt included) the penalties look back over; -1 = all of them. */
  penaltyLastN: number;
  logitBias: ReadonlyMap<number, number>;
  seed: number | bigint;
}

/** Tokens seen in the window, each with how often it occurs. */
export function countTokens(recent: readonly number[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const t of recent) counts.set(t, (counts.get(t) ?? 0) + 1);
  return counts;
}

/**
 * llama.cpp's penalties, in place: a seen token's logit is divided by `repetition` when
 * positive (multiplied when not), then lowered by count × frequency + presence.
 */
export function applyPenalties(logits: Float32Array, recent: readonly number[], p: Pick<SamplingParams, 'repetitionPenalty' | 'presencePenalty' | 'frequencyPenalty'>): void {
  const rep = f(p.repetitionPenalty);
  const freq = f(p.frequencyPenalty);
  const pres = f(p.presencePenalty);
  for (const [t, count] of countTokens(recent)) {
    if (t < 0 || t >= logits.length) continue;
    let l = logits[t]!;
    l = l <= 0 ? f(l * rep) : f(l / rep);
    logits[t] = f(l - f(f(count * freq) + pres));
  }
}

/** Adds each biased token's bias to its logit, in place. */
export function applyLogitBias(logits: Float32Array, bias: ReadonlyMap<number, number>): void {
  for (const [t, b] of bias) logits[t] = f(logits[t]! + b);
}

/**
 * The `k` highest logits' indices among `cand` (ties keep the lower index, as a stable sort
 * would), in index order.
 */
export function topK(logits: Float32Array, cand: readonly number[], k: number): number[] {
  if (k <= 0 || k >= cand.length) return [...cand];
  const sorted = Float32Array.from(cand, (i) => logits[i]!).sort();
  const kth = sorted[sorted.length - k]!;
  // All above the k-th value, then ties at it in index order until k are kept.
  let ties = k - cand.filter((i) => logits[i]! > kth).length;
  return cand.filter((i) => logits[i]! > kth || (logits[i] === kth && ties-- > 0));
}

/**
 * run.c's nucleus over the probabilities of `cand` (default all; `probs` holds them, 0
 * elsewhere): those above run.c's cutoff, largest first, up to the first whose cumulative
 * probability exceeds `p` (all of them if rounding never gets there). Returned in that order.
 */
export function topP(probs: Float32Array, cand: readonly number[] | undefined, p: number): number[] {
  const pf = f(p);
  const cutoff = f(f(1 - pf) / (probs.length - 1));
  const above: number[] = [];
  if (cand) for (const i of cand) if (probs[i]! >= cutoff) above.push(i);
  if (!cand) for (let i = 0; i < probs.length; i++) if (probs[i]! >= cutoff) above.push(i);
  const kept = descendingOrder(probs, above);
  let cumulative = 0;
  for (let i = 0; i < kept.length; i++) {
    cumulative = f(cumulative + probs[kept[i]!]!);
    if (cumulative > pf) return kept.slice(0, i + 1);
  }
  return kept;
}

/** llama.cpp's min-p: the candidates whose logit is at least the largest one's plus ln(p). */
export function minP(logits: Float32Array, cand: readonly number[], p: number): number[] {
  let max = -Infinity;
  for (const i of cand) if (logits[i]! > max) max = logits[i]!;
  const floor = f(max + f(Math.log(p)));
  return cand.filter((i) => logits[i]! >= floor);
}

/** The softmax of `logits / temperature` over `cand` (0 elsewhere; default all), in f32 as run.c's. */
function probabilities(logits: Float32Array, cand: readonly number[] | undefined, temperature: number): Float32Array {
  const n = logits.length;
  const t = f(temperature);
  const x = new Float32Array(n);
  if (cand) {
    x.fill(-Infinity);
    for (const i of cand) x[i] = f(logits[i]! / t);
  } else {
    for (let i = 0; i < n; i++) x[i] = f(logits[i]! / t);
  }
  softmax(x, 0, n);
  return x;
}

/**
 * One sequence's sampler: the chain above over `vocabSize` logits, with its own RNG and the
 * window of recent tokens the penalties see (`accept` each prompt and sampled token).
 */
export class TokenSampler {
  readonly rng: { state: bigint };
  private readonly recent: number[] = [];
  private readonly penalised: boolean;

  constructor(readonly vocabSize: number, readonly params: SamplingParams) {
    this.rng = { state: resolveSeed(params.seed) };
    this.penalised = params.penaltyLastN !== 0 &&
      (params.repetitionPenalty !== 1 || params.presencePenalty !== 0 || params.frequencyPenalty !== 0);
  }

  /** Whether the pick is the logits' argmax: temperature 0, and no penalty or bias moves a logit first. */
  get greedy(): boolean {
    return f(this.params.temperature) === 0 && !this.penalised && this.params.logitBias.size === 0;
  }

  /** Adds `token` to the penalty window. */
  accept(token: number): void {
    if (!this.penalised) return;
    this.recent.push(token);
    const n = this.params.penaltyLastN;
    if (n > 0 && this.recent.length > n) this.recent.shift();
  }

  /**
   * The distribution the next token is drawn from, and the candidates in draw order (undefined:
   * every token, index order). Penalties and bias are applied to `logits` in place.
   */
  distribution(logits: Float32Array): { probs: Float32Array; order: number[] | undefined } | { greedy: number } {
    const p = this.params;
    const n = this.vocabSize;
    if (this.penalised) applyPenalties(logits, this.recent, p);
    if (p.logitBias.size) applyLogitBias(logits, p.logitBias);
    if (f(p.temperature) === 0) return { greedy: argmax(logits, n) };
    const useTopP = p.topP > 0 && p.topP < 1;
    if (p.topK <= 0 && !useTopP && p.minP <= 0) return { probs: probabilities(logits, undefined, p.temperature), order: undefined };
    // A small k is a selection pass (same ties: lower id first); a large one a sort.
    let cand = p.topK <= 0 ? undefined : p.topK <= 64 ? topIds(logits, n, p.topK) : topK(logits, Array.from({ length: n }, (_, i) => i), p.topK);
    // Top-p's temperature-1 softmax; over the whole vocabulary it is also the final one at temperature 1.
    const p1 = useTopP ? probabilities(logits, cand, 1) : undefined;
    if (p1) cand = topP(p1, cand, p.topP);
    if (p.minP > 0) cand = minP(logits, cand ?? Array.from({ length: n }, (_, i) => i), p.minP);
    // The whole vocabulary's tempered softmax, walked over the survivors: at temperature 1
    // after top-p alone these are run.c's probabilities, sum and order.
    const same = p1 !== undefined && p.topK <= 0 && f(p.temperature) === 1;
    const probs = same ? p1 : probabilities(logits, undefined, p.temperature);
    // Top-p left them sorted by these very probabilities (min-p filters in order).
    return { probs, order: same ? cand! : descendingOrder(probs, [...cand!]) };
  }

  /** Picks the next token; penalties and bias are applied to `logits` in place. */
  sample(logits: Float32Array): number {
    const d = this.distribution(logits);
    if ('greedy' in d) return d.greedy;
    const coin = randomF32(this.rng);
    if (!d.order) return sampleMult(d.probs, this.vocabSize, coin);
    return drawSorted(d.probs, d.order, coin);
  }
}

/** run.c's top-p draw: r = coin × the candidates' total, walked largest first. */
export function drawSorted(probs: Float32Array, order: readonly number[], coin: number): number {
  let total = 0;
  for (const i of order) total = f(total + probs[i]!);
  const r = f(coin * total);
  let cdf = 0;
  for (const i of order) {
    cdf = f(cdf + probs[i]!);
    if (r < cdf) return i;
  }
  return order[order.length - 1]!;
}
