import { describe, expect, it } from 'vitest';
import dump from '../../test-support/fixtures/glibc-libm.json';
import { floatFromHex } from '../../test-support/fixtures/float-bits.js';
import { expf } from './glibc-expf.js';

const fromHex = floatFromHex;

describe('glibc expf', () => {
  it('gives glibc\'s float bits where the correctly rounded value is not glibc\'s', () => {
    const x = dump.expX.map(fromHex);
    const want = dump.exp.map(fromHex);
    expect(x.filter((v, i) => !Object.is(expf(v), want[i]))).toEqual([]);
    expect(x.filter((v, i) => Math.fround(Math.exp(v)) !== want[i]).length).toBeGreaterThan(600);
  });

  it('overflows, underflows and passes NaN through as glibc does', () => {
    expect([expf(0), expf(89), expf(-104), expf(-Infinity), expf(Infinity)]).toEqual([1, Infinity, 0, 0, Infinity]);
    expect(Number.isNaN(expf(NaN))).toBe(true);
    expect(expf(-103)).toBeGreaterThan(0); // a subnormal result
  });
});
