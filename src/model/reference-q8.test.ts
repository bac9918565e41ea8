import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import f32Fixture from '../../test-support/fixtures/stories260K-greedy.json';
import q8Fixture from '../../test-support/fixtures/stories260K-q8-greedy.json';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { loadLlama2cV2 } from './formats/llama2c-v2.js';
import * as Q from './reference-q8.js';
import { argmax, generate } from './reference.js';
import { Tokenizer } from './tokenizer/tokenizer.js';

describe('runq.c arithmetic', () => {
  it('rounds halves away from zero, as C round() does', () => {
    expect([2.5, -2.5, 0.5, -0.5, 1.4999999, 126.5].map(Q.roundHalfAway)).toEqual([3, -3, 1, -1, 1, 127]);
  });

  it('quantizes per group with scale max|x|/127, and an all-zero group to zeros', () => {
    const x = Float32Array.of(1, -0.5, 0.25, 0, 0, 0, 0, 0);
    const t = Q.quantizeQ8(x, 8, 4);
    expect(Array.from(t.q)).toEqual([127, -64, 32, 0, 0, 0, 0, 0]); // -63.5 → -64, 31.75 → 32
    expect(t.s[0]).toBe(Math.fround(1 / 127));
    expect(t.s[1]).toBe(0);
    const back = Q.dequantizeQ8(t, 8, 4);
    for (let i = 0; i < 8; i++) expect(Math.abs(back[i]! - x[i]!)).toBeLessThanOrEqual(t.s[0]! / 2 + 1e-9);
  });

  it('matmul sums each group in int32, then scales by both group scales', () => {
    const w: Q.Q8Tensor = { q: Int8Array.of(1, 2, 3, 4, -1, -2, -3, -4), s: Float32Array.of(0.5, 2) };
    const x: Q.Q8Tensor = { q: Int8Array.of(1, 1, 1, 1, 2, 0, 0, 0), s: Float32Array.of(0.25, 1) };
    const y = new Float32Array(1);
    Q.matmulQ8(y, x, w, 8, 1, 4);
    expect(y[0]).toBe(10 * 0.5 * 0.25 + -2 * 2 * 1);
  });
});

describe('stories260K-q8.bin (llama2.c v2, group size 4)', () => {
  const model = loadLlama2cV2(readArrayBuffer(resolve(modelsDir, 'stories260K-q8.bin')));
  const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), model.config.vocabSize);

  it('W8A8 greedy, empty prompt, 200 steps: the saved tokens, and the text runq.c prints', () => {
    const tokens = Q.generateQ8(model, [1], 200, (l) => argmax(l, model.config.vocabSize));
    expect(tokens).toEqual(q8Fixture.tokens);
    const text = tok.decodeText(tokens.slice(1), tokens[0]);
    expect(text).toBe(q8Fixture.text);
    // runq.c agrees with run.c's f32 sample up to here, then its last line differs
    const shared = 'She said, "I\'m sorry, Lily. I didn\'t know what to do."';
    const cut = text.indexOf(shared) + shared.length;
    expect(cut).toBeGreaterThan(shared.length);
    expect(f32Fixture.text.startsWith(text.slice(0, cut))).toBe(true);
    expect(text.split('\n').at(-1)).toBe('Lily didn\'t want to help, but she did');
    expect(f32Fixture.text.split('\n').at(-1)!.startsWith('Lily didn\'t want to help her mom, so she said')).toBe(true);
  });

  it('the dequantised model (weight-only oracle) opens like the f32 model', () => {
    const deq = Q.dequantizeQ8Model(model);
    expect(deq.weights.wcls).toBe(deq.weights.tokenEmbeddingTable);
    const tokens = generate(deq, [1], 40, (l) => argmax(l, model.config.vocabSize));
    expect(tok.decodeText(tokens.slice(1), 1).startsWith('Once upon a time, there was a little girl named Lily.')).toBe(true);
  });
});

describe('row-parallel summation order (TP splits)', () => {
  it('a one-rank split is runq.c\'s matmul; a two-rank split sums halves, then adds them', () => {
    const w: Q.Q8Tensor = { q: Int8Array.from({ length: 16 }, (_, i) => i - 8), s: Float32Array.of(0.1, 0.3, 0.7, 1.1) };
    const x: Q.Q8Tensor = { q: Int8Array.from({ length: 8 }, (_, i) => 3 - i), s: Float32Array.of(0.013, 0.029) };
    const a = new Float32Array(2);
    const b = new Float32Array(2);
    const c = new Float32Array(2);
    Q.matmulQ8(a, x, w, 8, 2, 4);
    Q.matmulQ8(b, x, w, 8, 2, 4, [0, 8]);
    expect(Array.from(b)).toEqual(Array.from(a));
    Q.matmulQ8(c, x, w, 8, 2, 4, [0, 4, 8]);
    const half = (row: number, g: number) => {
      let ival = 0;
      for (let k = 0; k < 4; k++) ival += x.q[g * 4 + k]! * w.q[row * 8 + g * 4 + k]!;
      return Math.fround(Math.fround(ival * w.s[row * 2 + g]!) * x.s[g]!);
    };
    expect(c[1]).toBe(Math.fround(half(1, 0) + half(1, 1)));
  });
});
