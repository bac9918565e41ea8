import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../model/mulberry32.js';
import { randomF32, Sampler } from '../model/sampler.js';
import { InvalidArgumentError } from '../errors.js';
import { applyLogitBias, applyPenalties, drawSorted, minP, TokenSampler, topK, type SamplingParams } from './sampling.js';
import { resolveSampling, resolveTopLogprobs } from './sampling-options.js';

const V = 48;
const params = (p: Partial<SamplingParams> = {}): SamplingParams => ({ ...resolveSampling({}, V), seed: 5, ...p });

/**
 * The reference: llama.cpp's chain written out plainly in f64 (penalties over the window,
 * bias, top-k, top-p with cumulative ≥ p, min-p against the largest probability, temperature),
 * giving the distribution the token is drawn from.
 */
function reference(logits: Float32Array, history: number[], p: SamplingParams): Map<number, number> {
  const l = Array.from(logits);
  const window = p.penaltyLastN < 0 ? history : p.penaltyLastN === 0 ? [] : history.slice(-p.penaltyLastN);
  const counts = new Map<number, number>();
  for (const t of window) counts.set(t, (counts.get(t) ?? 0) + 1);
  for (const [t, c] of counts) {
    l[t] = l[t]! <= 0 ? l[t]! * p.repetitionPenalty : l[t]! / p.repetitionPenalty;
    l[t] = l[t]! - c * p.frequencyPenalty - p.presencePenalty;
  }
  for (const [t, b] of p.logitBias) l[t] = l[t]! + b;
  let cand = l.map((_, i) => i).sort((a, b) => l[b]! - l[a]! || a - b);
  if (p.topK > 0) cand = cand.slice(0, p.topK);
  const softmax = (ids: number[], t: number) => {
    const m = Math.max(...ids.map((i) => l[i]!));
    const e = ids.map((i) => Math.exp((l[i]! - m) / t));
    const s = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / s);
  };
  if (p.topP > 0 && p.topP < 1) {
    const pr = softmax(cand, 1);
    let cum = 0;
    const n = pr.findIndex((x) => (cum += x) >= p.topP);
    cand = cand.slice(0, n < 0 ? cand.length : n + 1);
  }
  if (p.minP > 0) {
    const pr = softmax(cand, 1);
    cand = cand.filter((_, i) => pr[i]! >= p.minP * pr[0]!);
  }
  const pr = softmax(cand, p.temperature);
  return new Map(cand.map((t, i) => [t, pr[i]!]));
}

/** The chain's distribution, normalised over its candidates. */
function chain(logits: Float32Array, history: number[], p: SamplingParams): Map<number, number> {
  const s = new TokenSampler(logits.length, p);
  history.forEach((t) => s.accept(t));
  const d = s.distribution(logits.slice());
  if ('greedy' in d) return new Map([[d.greedy, 1]]);
  const order = d.order ?? Array.from({ length: logits.length }, (_, i) => i);
  const total = order.reduce((a, i) => a + d.probs[i]!, 0);
  return new Map(order.map((i) => [i, d.probs[i]! / total]));
}

function randomLogits(rand: () => number, scale = 4): Float32Array {
  return Float32Array.from({ length: V }, () => (rand() - 0.5) * 2 * scale);
}

describe('each sampler against the reference chain', () => {
  const rand = mulberry32(11);
  const cases: [string, (r: () => number) => Partial<SamplingParams>][] = [
    ['repetitionPenalty', (r) => ({ repetitionPenalty: 0.5 + 2 * r() })],
    ['presencePenalty', (r) => ({ presencePenalty: 4 * r() - 2 })],
    ['frequencyPenalty', (r) => ({ frequencyPenalty: 4 * r() - 2 })],
    ['penaltyLastN', (r) => ({ repetitionPenalty: 1.5, frequencyPenalty: 0.5, penaltyLastN: [0, -1, 1, 5, 64][Math.floor(r() * 5)]! })],
    ['logitBias', (r) => ({ logitBias: new Map([[Math.floor(r() * V), 200 * r() - 100], [Math.floor(r() * V), 5 * r()]]) })],
    ['topK', (r) => ({ topK: 1 + Math.floor(r() * V) })],
    ['topP', (r) => ({ topP: r() })],
    ['minP', (r) => ({ minP: r() })],
    ['topP and minP at another temperature (they see the temperature-1 distribution)', (r) => ({ topP: 0.3 + r() / 2, minP: r() / 5, temperature: 0.3 + 2 * r() })],
    ['temperature', (r) => ({ temperature: 0.2 + 2 * r(), topP: 1 })],
    ['all at once', (r) => ({ topK: 2 + Math.floor(r() * 30), topP: 0.5 + r() / 2, minP: r() / 4, temperature: 0.3 + 1.5 * r(), repetitionPenalty: 1.2, presencePenalty: 0.3, frequencyPenalty: 0.2, penaltyLastN: 8, logitBias: new Map([[3, -100], [7, 2]]) })],
  ];
  for (const [name, make] of cases) {
    it(`${name}: the same candidates and probabilities (1e-5) over 200 random cases`, () => {
      for (let n = 0; n < 200; n++) {
        const p = params(make(rand));
        const logits = randomLogits(rand);
        const history = Array.from({ length: Math.floor(rand() * 20) }, () => Math.floor(rand() * V));
        const want = reference(logits, history, p);
        const got = chain(logits, history, p);
        expect([...got.keys()].sort((a, b) => a - b), `${name} case ${n}`).toEqual([...want.keys()].sort((a, b) => a - b));
        for (const [t, pr] of want) expect(Math.abs(got.get(t)! - pr), `${name} case ${n} token ${t}`).toBeLessThan(1e-5);
      }
    });
  }
});

describe('the samplers by hand', () => {
  it('a topK above 64 (a sort instead of a selection pass) agrees with the reference, ties included', () => {
    const rand = mulberry32(5);
    for (const k of [65, 100, 299]) {
      // Logits on a coarse grid, so many tie at the k-th value.
      const logits = Float32Array.from({ length: 300 }, () => Math.round(rand() * 20) / 4);
      const p = params({ topK: k, topP: 1 });
      const want = reference(logits, [], p);
      const got = chain(logits, [], p);
      expect([...got.keys()].sort((a, b) => a - b)).toEqual([...want.keys()].sort((a, b) => a - b));
      for (const [t, pr] of want) expect(Math.abs(got.get(t)! - pr)).toBeLessThan(1e-5);
    }
  });

  it('penalties: divide a positive logit, multiply a negative one, subtract count × frequency + presence', () => {
    const l = new Float32Array([2, -1, 3, 4]);
    applyPenalties(l, [0, 1, 2, 2, 2], { repetitionPenalty: 2, presencePenalty: 0.5, frequencyPenalty: 0.25 });
    expect(Array.from(l)).toEqual([1 - 0.75, -2 - 0.75, 1.5 - 1.25, 4]);
  });

  it('logit bias adds; top-k keeps the k largest (ties: lower id); min-p keeps p ≥ minP × p_max', () => {
    const l = new Float32Array([1, 3, 3, 3]);
    applyLogitBias(l, new Map([[0, 1.5]]));
    expect(l[0]).toBe(2.5);
    expect(topK(l, [0, 1, 2, 3], 2)).toEqual([1, 2]);
    const p = new Float32Array([0.5, 0.3, 0.2].map(Math.log));
    expect(minP(p, [0, 1, 2], 0.5)).toEqual([0, 1]);
  });

  it('the penalty window counts the prompt and only the last penaltyLastN tokens', () => {
    const logits = new Float32Array(V).fill(1);
    const s = new TokenSampler(V, params({ temperature: 0, presencePenalty: 2, penaltyLastN: 2 }));
    [0, 1, 2].forEach((t) => s.accept(t));
    // 1 and 2 are penalised, 0 has left the window: greedy picks the first unpenalised id.
    expect(s.sample(logits.slice())).toBe(0);
    s.accept(0);
    expect(s.sample(logits.slice())).toBe(1);
  });

  it('greedy is the argmax after penalties and bias; -100 bans a token, +100 forces one', () => {
    const logits = new Float32Array(V).map((_, i) => i / V);
    expect(new TokenSampler(V, params({ temperature: 0 })).sample(logits.slice())).toBe(V - 1);
    expect(new TokenSampler(V, params({ temperature: 0, logitBias: new Map([[V - 1, -100]]) })).sample(logits.slice())).toBe(V - 2);
    const forced = new TokenSampler(V, params({ logitBias: new Map([[3, 100]]), seed: 9 }));
    for (let i = 0; i < 20; i++) expect(forced.sample(logits.slice())).toBe(3);
  });

  it('the draw walks the candidates largest first, with r = coin × their total', () => {
    const probs = new Float32Array([0.1, 0.4, 0.2, 0.3]);
    expect(drawSorted(probs, [1, 3], 0)).toBe(1);
    expect(drawSorted(probs, [1, 3], 0.5)).toBe(1); // r = 0.35 < 0.4
    expect(drawSorted(probs, [1, 3], 0.6)).toBe(3); // r = 0.42
  });
});

describe('seeds and defaults', () => {
  it('with the new options at their defaults it is run.c\'s sampler: same tokens, same RNG state', () => {
    const rand = mulberry32(3);
    for (const [temperature, topP] of [[0, 0.9], [1, 0.9], [1, 0.5], [1, 0], [1, 1], [0.7, 1], [1.6, 0]] as const) {
      const ours = new TokenSampler(V, params({ temperature, topP, seed: 42 }));
      const runc = new Sampler(V, { temperature, topp: topP, seed: 42 });
      for (let i = 0; i < 300; i++) {
        const l = randomLogits(rand, 6);
        expect(ours.sample(l.slice()), `T ${temperature} top-p ${topP} step ${i}`).toBe(runc.sample(l.slice()));
      }
      expect(ours.rng.state).toBe(runc.rng.state);
    }
  });

  it('a seeded run is reproducible, draws one coin per token, and another seed differs', () => {
    const run = (seed: number) => {
      const rand = mulberry32(8);
      const s = new TokenSampler(V, params({ seed, topK: 10, minP: 0.02, topP: 0.95, temperature: 1.3, repetitionPenalty: 1.3, frequencyPenalty: 0.4 }));
      const out: number[] = [];
      for (let i = 0; i < 60; i++) {
        const t = s.sample(randomLogits(rand));
        s.accept(t);
        out.push(t);
      }
      return { out, state: s.rng.state };
    };
    const a = run(77);
    expect(run(77)).toEqual(a);
    expect(run(78).out).not.toEqual(a.out);
    const rng = { state: 77n };
    for (let i = 0; i < 60; i++) randomF32(rng);
    expect(a.state).toBe(rng.state);
  });
});

describe('option checks', () => {
  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['negative topK', { topK: -1 }, /topK \(top_k\) must be a whole number ≥ 0, got -1/],
    ['fractional topK', { topK: 2.5 }, /topK \(top_k\) must be a whole number ≥ 0/],
    ['minP above 1', { minP: 1.5 }, /minP \(min_p\) must be in \[0, 1\], got 1.5/],
    ['minP NaN', { minP: NaN }, /minP \(min_p\) must be in \[0, 1\], got NaN/],
    ['repetitionPenalty 0', { repetitionPenalty: 0 }, /repetitionPenalty \(repeat_penalty\) must be a finite number > 0, got 0/],
    ['presencePenalty 3', { presencePenalty: 3 }, /presencePenalty \(presence_penalty\) must be in \[-2, 2\], got 3/],
    ['frequencyPenalty -2.5', { frequencyPenalty: -2.5 }, /frequencyPenalty \(frequency_penalty\) must be in \[-2, 2\], got -2.5/],
    ['penaltyLastN -2', { penaltyLastN: -2 }, /penaltyLastN \(repeat_last_n\) must be a whole number ≥ -1, got -2/],
    ['logitBias id outside the vocabulary', { logitBias: { [V]: 1 } }, new RegExp(`logitBias \\(logit_bias\\) key must be a token id in \\[0, ${V}\\), got "${V}"`)],
    ['logitBias value 101', { logitBias: { 3: 101 } }, /logitBias\[3\] \(logit_bias\) must be in \[-100, 100\], got 101/],
  ];
  for (const [name, opts, message] of bad) {
    it(`${name} is an InvalidArgumentError naming the option and its range`, () => {
      const e = (() => { try { resolveSampling(opts, V); } catch (err) { return err; } })();
      expect(e).toBeInstanceOf(InvalidArgumentError);
      expect((e as Error).message).toMatch(message);
      expect((e as InvalidArgumentError).remedy).not.toBe('');
    });
  }

  it('topLogprobs: 0..20, implies logprobs; unset with logprobs off is no logprobs', () => {
    expect(resolveTopLogprobs({})).toBeUndefined();
    expect(resolveTopLogprobs({ logprobs: true })).toBe(0);
    expect(resolveTopLogprobs({ topLogprobs: 5 })).toBe(5);
    expect(() => resolveTopLogprobs({ topLogprobs: 21 })).toThrow(/topLogprobs \(top_logprobs\) must be at most 20, got 21/);
    expect(() => resolveTopLogprobs({ topLogprobs: -1 })).toThrow(InvalidArgumentError);
  });

  it('the defaults are today\'s: temperature 1, top-p 0.9, every new sampler off', () => {
    const p = resolveSampling({ seed: 1 }, V);
    expect(p).toEqual({
      temperature: 1, topP: 0.9, topK: 0, minP: 0, repetitionPenalty: 1, presencePenalty: 0, frequencyPenalty: 0,
      penaltyLastN: 64, logitBias: new Map(), seed: 1,
    });
  });
});
