import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import greedyFixture from '../../test-support/fixtures/stories260K-greedy.json';
import seededFixture from '../../test-support/fixtures/stories260K-seeded.json';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { loadLlama2c } from './formats/llama2c.js';
import * as R from './reference.js';
import { Sampler } from './sampler.js';
import { Tokenizer } from './tokenizer/tokenizer.js';

describe('per-op functions', () => {
  it('matmul: y[m][n] = x[m][k] · w[n][k]', () => {
    const y = new Float32Array(4);
    // x (2, 3), w (2, 3)
    R.matmul(y, Float32Array.of(1, 2, 3, 4, 5, 6), Float32Array.of(1, 0, -1, 0.5, 0.5, 0.5), 2, 3, 2);
    expect(Array.from(y)).toEqual([-2, 3, -2, 7.5]);
  });

  it('rmsnorm normalizes each row and scales by the weight', () => {
    const y = new Float32Array(4);
    R.rmsnorm(y, Float32Array.of(3, 4, 0, 0), Float32Array.of(1, 2), 2, 2, 0);
    expect(y[0]).toBeCloseTo(3 / Math.sqrt(12.5), 6);
    expect(y[1]).toBeCloseTo((2 * 4) / Math.sqrt(12.5), 6);
    // a zero row stays zero instead of dividing by zero, because eps > 0
    R.rmsnorm(y, Float32Array.of(3, 4, 0, 0), Float32Array.of(1, 2), 2, 2, 1e-5);
    expect(Array.from(y.subarray(2))).toEqual([0, 0]);
  });

  it('rope tables and both pairings', () => {
    const t = R.ropeTables(4, 3, 10000);
    expect(Array.from(t.cos.subarray(0, 2))).toEqual([1, 1]);
    expect(t.cos[2]).toBeCloseTo(Math.cos(1), 6);
    expect(t.sin[3]).toBeCloseTo(Math.sin(0.01), 6);
    const x = Float32Array.of(1, 0, 1, 0);
    R.rope(x, 1, 1, 4, Int32Array.of(1), t, 'interleaved');
    expect(x[0]).toBeCloseTo(Math.cos(1), 6);
    expect(x[1]).toBeCloseTo(Math.sin(1), 6);
    expect(x[3]).toBeCloseTo(Math.sin(0.01), 6);
    const h = Float32Array.of(1, 1, 0, 0);
    R.rope(h, 1, 1, 4, Int32Array.of(1), t, 'rotate_half');
    expect(h[2]).toBeCloseTo(Math.sin(1), 6); // pair (0, 2) at frequency 0
    expect(h[3]).toBeCloseTo(Math.sin(0.01), 6); // pair (1, 3) at frequency 1
  });

  it('attention with GQA reads kv head h / (nHeads / nKvHeads), causally', () => {
    // 2 query heads, 1 kv head, head size 2; two cached positions
    const k = Float32Array.of(1, 0, 0, 1);
    const v = Float32Array.of(10, 0, 0, 20);
    const q = Float32Array.of(0, 0, 100, 0, 0, 0, 100, 0); // rows at pos 0 and pos 1
    const out = new Float32Array(8);
    R.attention(out, q, k, v, 2, Int32Array.of(0, 1), 2, 1, 2, 2);
    expect(Array.from(out.subarray(0, 4))).toEqual([10, 0, 10, 0]); // pos 0 sees only t = 0
    expect(out[4]).toBeCloseTo(5, 5); // equal scores: mean of the two values
    expect(out[6]).toBeCloseTo(10, 4); // strongly prefers t = 0
  });

  it('softmax, siluMul, add, embed, argmax', () => {
    const x = Float32Array.of(9, 1, 2, 3);
    R.softmax(x, 1, 3);
    expect(x[0]).toBe(9);
    expect(x[1]! + x[2]! + x[3]!).toBeCloseTo(1, 6);
    const y = new Float32Array(2);
    R.siluMul(y, Float32Array.of(0, 2), Float32Array.of(5, 3), 2);
    expect(y[0]).toBe(0);
    expect(y[1]).toBeCloseTo((2 / (1 + Math.exp(-2))) * 3, 5);
    R.add(y, Float32Array.of(1, 1), 2);
    expect(y[0]).toBe(1);
    const e = new Float32Array(4);
    R.embed(e, Float32Array.of(0, 1, 2, 3, 4, 5), [2, 0], 2);
    expect(Array.from(e)).toEqual([4, 5, 0, 1]);
    expect(R.argmax(Float32Array.of(1, 5, 5, 2), 4)).toBe(1);
  });
});

describe('stories260K end to end (the saved run.c output)', () => {
  const model = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
  const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), model.config.vocabSize);

  it('greedy, empty prompt, 256 steps: Karpathy\'s documented sample', () => {
    const prompt = tok.encode(greedyFixture.prompt, true, false);
    expect(prompt).toEqual([1]);
    const tokens = R.generate(model, prompt, greedyFixture.steps, (l) => R.argmax(l, model.config.vocabSize));
    expect(tokens).toEqual(greedyFixture.tokens);
    const text = tok.decodeText(tokens.slice(1), tokens[0]);
    expect(text).toBe(greedyFixture.text);
    expect(text.startsWith(
      'Once upon a time, there was a little girl named Lily. She loved to play outside in the park. ' +
        'One day, she saw a big, red ball. She wanted to play with it, but it was too high.',
    )).toBe(true);
    expect(text.endsWith('Her mom said, "Don\'t worry, Lily. We can help you.')).toBe(true);
  });

  it('temperature 1.0, top-p 0.9, seed 133742', () => {
    const sampler = new Sampler(model.config.vocabSize, { temperature: 1.0, topp: 0.9, seed: seededFixture.seed });
    const tokens = R.generate(model, tok.encode('', true, false), seededFixture.steps, (l) => sampler.sample(l));
    expect(tokens).toEqual(seededFixture.tokens);
    const text = tok.decodeText(tokens.slice(1), tokens[0]);
    expect(text).toBe(seededFixture.text);
    expect(text.startsWith(
      'Once upon a time, there was a little boy named Timmy. Timmy loved to play with his toys and eat sandwiches.',
    )).toBe(true);
  });

  it("kvCache 'f16': the cache holds K and V rounded to nearest even halves; the logits move, greedy does not", () => {
    const c = model.config;
    const s32 = R.createRunState(c);
    const s16 = R.createRunState(c, 'f16');
    let l32 = new Float32Array(0);
    let l16 = new Float32Array(0);
    for (let pos = 0; pos < 8; pos++) {
      l32 = R.forward(model, s32, greedyFixture.tokens[pos]!, pos).slice();
      l16 = R.forward(model, s16, greedyFixture.tokens[pos]!, pos).slice();
    }
    const used = 8 * c.nKvHeads * c.headSize; // positions 0..7 of layer 0
    const k16 = s16.keyCache.subarray(0, used);
    // Layer 0 sees the same input in both, so its f16 cache is its f32 cache rounded.
    expect(k16).toEqual(R.roundToF16(s32.keyCache.slice(0, used)));
    expect(s16.valueCache.subarray(0, used)).toEqual(R.roundToF16(s32.valueCache.slice(0, used)));
    expect(k16).not.toEqual(s32.keyCache.subarray(0, used));
    expect(l16).not.toEqual(l32);
    expect(R.argmax(l16, c.vocabSize)).toBe(R.argmax(l32, c.vocabSize));
    // Ties to even, overflow to infinity, subnormals kept.
    expect(R.roundToF16(Float32Array.of(1 + 2 ** -11, 1 + 3 * 2 ** -11, 65520, 2 ** -24, -2.5))).toEqual(Float32Array.of(1, 1 + 2 ** -9, Infinity, 2 ** -24, -2.5));
  });

  it('forces prompt tokens before sampling', () => {
    const prompt = tok.encode('Once upon a time');
    const tokens = R.generate(model, prompt, 12, (l) => R.argmax(l, model.config.vocabSize));
    expect(tokens.slice(0, prompt.length)).toEqual(prompt);
    expect(tokens).toHaveLength(12 + 1);
  });
});
