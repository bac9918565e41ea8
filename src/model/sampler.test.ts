import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { randomF32, randomU32, resolveSeed, Sampler, sampleMult, sampleTopp } from './sampler.js';

describe('run.c RNG', () => {
  it('matches random_u32 from C (values printed by a C build of run.c\'s functions)', () => {
    const rng = { state: 133742n };
    expect([1, 2, 3, 4, 5].map(() => randomU32(rng))).toEqual([3033531262, 2674377904, 2312864567, 2287415643, 1408443089]);
    expect(rng.state).toBe(2560431681778104398n);
    const top = { state: 0xffffffffffffffffn };
    expect([1, 2, 3].map(() => randomU32(top))).toEqual([4180462053, 2415166680, 879531507]);
  });

  it('matches random_f32', () => {
    const rng = { state: 1n };
    expect([1, 2, 3].map(() => randomF32(rng).toPrecision(9))).toEqual(['0.280835032', '0.671137214', '0.725846112']);
  });

  it('resolves seeds like run.c', () => {
    expect(resolveSeed(42)).toBe(42n);
    expect(resolveSeed(0)).toBeGreaterThan(1_600_000_000n); // time(NULL)
    expect(() => resolveSeed(1.5)).toThrow(InvalidArgumentError);
  });
});

describe('sampling', () => {
  it('multinomial picks by the running CDF', () => {
    const p = new Float32Array([0.1, 0.2, 0.7]);
    expect(sampleMult(p, 3, 0.05)).toBe(0);
    expect(sampleMult(p, 3, 0.11)).toBe(1);
    expect(sampleMult(p, 3, 0.31)).toBe(2);
    expect(sampleMult(p, 3, 0.99999999)).toBe(2);
  });

  it('top-p keeps the smallest set that exceeds p, largest first', () => {
    const p = new Float32Array([0.05, 0.5, 0.05, 0.3, 0.1]);
    // sorted: 1 (0.5), 3 (0.3), 4 (0.1) -> cumulative 0.9 > 0.85 at index 2; r = coin * 0.9
    expect(sampleTopp(p, 5, 0.85, 0)).toBe(1);
    expect(sampleTopp(p, 5, 0.85, 0.6)).toBe(3); // r = 0.54
    expect(sampleTopp(p, 5, 0.85, 0.99)).toBe(4); // r = 0.891
    // ties keep index order (stable sort)
    expect(sampleTopp(new Float32Array([0.25, 0.25, 0.25, 0.25]), 4, 0.3, 0)).toBe(0);
  });

  it('temperature 0 is argmax and leaves the logits alone', () => {
    const s = new Sampler(4, { temperature: 0, topp: 0.9, seed: 1 });
    const logits = new Float32Array([1, 3, 3, 2]);
    expect(s.sample(logits)).toBe(1);
    expect(Array.from(logits)).toEqual([1, 3, 3, 2]);
    expect(s.rng.state).toBe(1n);
  });

  it('draws one coin per sample and is reproducible from the seed', () => {
    const run = () => {
      const s = new Sampler(8, { temperature: 1, topp: 0.9, seed: 7 });
      const out: number[] = [];
      for (let i = 0; i < 20; i++) out.push(s.sample(new Float32Array([0, 1, 2, 0.5, -1, 1.5, 0.2, 0.1])));
      return { out, state: s.rng.state };
    };
    const a = run();
    expect(run()).toEqual(a);
    const rng = { state: 7n };
    for (let i = 0; i < 20; i++) randomU32(rng);
    expect(a.state).toBe(rng.state);
  });

  it('clamps options like run.c', () => {
    const s = new Sampler(4, { temperature: -1, topp: 2, seed: 1 });
    expect(s.temperature).toBe(0);
    expect(s.topp).toBe(0.9);
    expect(() => new Sampler(4, { temperature: NaN, topp: 0.9, seed: 1 })).toThrow(InvalidArgumentError);
  });
});
