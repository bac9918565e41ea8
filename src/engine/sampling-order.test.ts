import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../model/mulberry32.js';
import { Sampler } from '../model/sampler.js';
import { descendingOrder } from './sampling-order.js';
import { resolveSampling } from './sampling-options.js';
import { TokenSampler } from './sampling.js';

/** The order descendingOrder must reproduce: a stable comparator sort, ties by lower id. */
const comparator = (probs: Float32Array, cand: number[]) => [...cand].sort((a, b) => probs[b]! - probs[a]! || a - b);

/** The first position where the two differ, -1 if none (a cheap failure message on 32000 ids). */
function firstDifference(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  return a.findIndex((x, i) => x !== b[i]);
}

const SUBNORMALS = [1e-45, 2e-45, 1e-40, 1.1754942e-38];

/** Probabilities drawn from few distinct values (many ties), with zeros and subnormals. */
function tiedProbs(rand: () => number, n: number): Float32Array {
  const levels = [0, ...SUBNORMALS, 1.1754944e-38, 3e-6, 3.1e-6, 0.001, 0.25, 0.5, 1];
  return Float32Array.from({ length: n }, () => rand() < 0.5 ? levels[Math.floor(rand() * levels.length)]! : rand() ** 8);
}

/** `n` distinct ids out of `vocab`, in index order or shuffled. */
function candidates(rand: () => number, vocab: number, n: number, shuffled: boolean): number[] {
  const all = Array.from({ length: vocab }, (_, i) => i);
  for (let i = vocab - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  const picked = all.slice(0, n);
  return shuffled ? picked : picked.sort((a, b) => a - b);
}

describe('descendingOrder', () => {
  it('matches the comparator sort on sizes 0, 1, small and 32000, ties, zeros and subnormals included', () => {
    const rand = mulberry32(21);
    for (const n of [0, 1, 2, 7, 127, 128, 129, 500, 2049, 32000]) {
      for (const shuffled of [false, true]) {
        const vocab = Math.max(n, 32000);
        const probs = tiedProbs(rand, vocab);
        const cand = candidates(rand, vocab, n, shuffled);
        const want = comparator(probs, cand);
        const got = descendingOrder(probs, cand);
        expect(got, `n ${n} shuffled ${shuffled}`).toBe(cand);
        expect(firstDifference(got, want), `n ${n} shuffled ${shuffled}`).toBe(-1);
      }
    }
  });

  it('matches it on softmax-like distributions over a 128256 vocabulary (ids above 2^16)', () => {
    const rand = mulberry32(4);
    const vocab = 128256;
    for (const shuffled of [false, true]) {
      const logits = Float32Array.from({ length: vocab }, () => Math.round((rand() - 0.5) * 400) / 16);
      let sum = 0;
      const probs = logits.map((l) => Math.exp(l));
      for (const p of probs) sum += p;
      for (let i = 0; i < vocab; i++) probs[i] = probs[i]! / sum;
      const cand = candidates(rand, vocab, 100000, shuffled);
      expect(firstDifference(descendingOrder(probs, cand), comparator(probs, cand))).toBe(-1);
    }
  });

  it('all equal, all zero, and a single value apart: index order, the odd one first', () => {
    const n = 1000;
    const ids = Array.from({ length: n }, (_, i) => n - 1 - i);
    expect(descendingOrder(new Float32Array(n).fill(0.001), [...ids])).toEqual(ids.slice().reverse());
    expect(descendingOrder(new Float32Array(n), [...ids])).toEqual(ids.slice().reverse());
    const one = new Float32Array(n).fill(1e-40);
    one[500] = 1e-39;
    expect(descendingOrder(one, [...ids])[0]).toBe(500);
  });

  it('a negative probability, -0 included, falls back to the comparator', () => {
    const rand = mulberry32(9);
    for (const negative of [[-0.5, -1e-40], [-0, -0]]) {
      const probs = tiedProbs(rand, 600);
      probs[17] = negative[0]!;
      probs[300] = negative[1]!;
      const cand = candidates(rand, 600, 600, true);
      expect(firstDifference(descendingOrder(probs, cand), comparator(probs, cand))).toBe(-1);
    }
  });

  it('reuses its scratch: a large call, then a smaller one, then a larger one', () => {
    const rand = mulberry32(2);
    for (const n of [20000, 300, 32000]) {
      const probs = tiedProbs(rand, 32000);
      const cand = candidates(rand, 32000, n, true);
      expect(firstDifference(descendingOrder(probs, cand), comparator(probs, cand))).toBe(-1);
    }
  });
});

describe('the sampler over a 32000 vocabulary (the radix path)', () => {
  it('draws run.c\'s tokens at top-p 0.9 and 0.99, with the same RNG state', () => {
    const V = 32000;
    const rand = mulberry32(6);
    for (const topP of [0.9, 0.99]) {
      const ours = new TokenSampler(V, { ...resolveSampling({}, V), topP, seed: 42 });
      const runc = new Sampler(V, { temperature: 1, topp: topP, seed: 42 });
      for (let i = 0; i < 30; i++) {
        // Flat logits on a grid: most of the vocabulary is above run.c's cutoff, with ties.
        const l = Float32Array.from({ length: V }, () => Math.round(rand() * 8) / 4);
        expect(ours.sample(l.slice()), `top-p ${topP} step ${i}`).toBe(runc.sample(l.slice()));
      }
      expect(ours.rng.state).toBe(runc.rng.state);
    }
  });

  it('orders top-k → top-p → min-p survivors at another temperature as the comparator does', () => {
    const V = 32000;
    const rand = mulberry32(13);
    const s = new TokenSampler(V, { ...resolveSampling({}, V), topK: 5000, topP: 0.95, minP: 0.001, temperature: 0.7, seed: 1 });
    const l = Float32Array.from({ length: V }, () => Math.round(rand() * 12) / 8);
    const d = s.distribution(l.slice());
    if ('greedy' in d || !d.order) throw new Error('expected a sorted distribution');
    expect(d.order.length).toBeGreaterThan(128);
    expect(firstDifference(d.order, comparator(d.probs, d.order))).toBe(-1);
  });
});
