import { describe, expect, it } from 'vitest';
import { fma } from './fma.js';

describe('fma', () => {
  it('rounds a·b + c once', () => {
    const a = 1 + 2 ** -30;
    expect(fma(a, a, -(a * a))).toBe(2 ** -60); // a·a's rounding error, which a·a + c loses
    expect(fma(3, 5, 7)).toBe(22);
    expect(fma(0.1, 10, -1)).toBe(2 ** -54);
    expect(fma(-0.1, 10, 1)).toBe(-(2 ** -54));
    // A product's low part that decides a tie of the final rounding.
    expect(fma(1 + 2 ** -52, 1 + 2 ** -52, 2 ** -53)).toBe(1 + 2 ** -51 + 2 ** -52);
  });
});
