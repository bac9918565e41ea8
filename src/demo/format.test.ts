import { describe, expect, it } from 'vitest';
import { formatBytes } from './format.js';

describe('formatBytes', () => {
  it('keeps bytes below 1 B, as the ticks of a chart with no data yet are', () => {
    // Chart.js puts an empty axis on 0..1: 0.2, 0.4, … once read "200 undefined".
    for (const v of [0.2, 0.4, 0.8, 1]) expect(formatBytes(v)).toMatch(/^\d+ B$/);
    expect(formatBytes(0.2)).toBe('0 B');
    expect(formatBytes(1)).toBe('1 B');
  });

  it('uses SI units with about three digits', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(999)).toBe('999 B');
    expect(formatBytes(1500)).toBe('1.50 kB');
    expect(formatBytes(1_170_000)).toBe('1.17 MB');
    expect(formatBytes(438_042_624)).toBe('438 MB');
    expect(formatBytes(2.5e15)).toBe('2500 TB');
  });
});
