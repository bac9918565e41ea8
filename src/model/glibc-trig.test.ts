import { describe, expect, it } from 'vitest';
import dump from '../../test-support/fixtures/glibc-libm.json';
import { floatFromHex } from '../../test-support/fixtures/float-bits.js';
import { cosf, glibcTrig, sinf } from './glibc-trig.js';
import { ropeTables } from './reference.js';

const fromHex = floatFromHex;

describe('glibc sinf / cosf', () => {
  const x = dump.x.map(fromHex);

  it('give glibc\'s float bits on RoPE\'s arguments and where Math.sin / Math.cos round otherwise', () => {
    const badSin = x.filter((v, i) => !Object.is(sinf(v), fromHex(dump.sin[i]!)));
    const badCos = x.filter((v, i) => !Object.is(cosf(v), fromHex(dump.cos[i]!)));
    expect([badSin, badCos]).toEqual([[], []]);
    // The dump holds inputs where the correctly rounded value is not glibc's: the test can fail.
    expect(x.filter((v, i) => Math.fround(Math.sin(v)) !== fromHex(dump.sin[i]!)).length).toBeGreaterThan(500);
  });

  it('give stories260K\'s RoPE tables as runq.c computes them', () => {
    const t = ropeTables(8, 512, 10000, undefined, glibcTrig);
    // The dump's first 2048 inputs are pos · freq for freq index i = 0..3 and pos = 0..511.
    for (let i = 0; i < 4; i++) {
      for (let pos = 0; pos < 512; pos++) {
        const j = i * 512 + pos;
        expect(x[j]).toBe(Math.fround(pos * Math.fround(1 / Math.fround(Math.pow(10000, (2 * i) / 8)))));
        expect([t.cos[pos * 4 + i], t.sin[pos * 4 + i]]).toEqual([fromHex(dump.cos[j]!), fromHex(dump.sin[j]!)]);
      }
    }
  });

  it('handle zero, tiny, negative and non-finite inputs as glibc does', () => {
    expect([sinf(0), cosf(0), sinf(1e-5), cosf(1e-5)]).toEqual([0, 1, Math.fround(1e-5), 1]);
    expect(Object.is(sinf(-0), -0)).toBe(true);
    expect(sinf(-1000)).toBe(-sinf(1000));
    expect(cosf(-1000)).toBe(cosf(1000));
    expect([sinf(Infinity), cosf(NaN)].every(Number.isNaN)).toBe(true);
  });
});
