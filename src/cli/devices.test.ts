import { describe, expect, it } from 'vitest';
import { benchCases, devicesFor, parseDevices } from './devices.js';
import { UsageError } from './usage-error.js';

describe('--devices', () => {
  it('passes the kinds through as the engine option, with --tp ranks', () => {
    for (const kind of ['auto', 'gpu', 'cpu'] as const) {
      const d = parseDevices(kind);
      expect(d).toEqual({ text: kind, option: kind });
      expect(devicesFor(d, 2)).toBe(kind);
    }
  });

  it('makes a list one rank per item: cpu is a CPU rank, gpu the high-performance adapter', () => {
    const d = parseDevices('gpu, cpu');
    expect(d.text).toBe('gpu,cpu');
    expect(d.ranks).toBe(2);
    expect(devicesFor(d, 0)).toEqual([{ powerPreference: 'high-performance' }, { cpu: true }]);
    expect(devicesFor(parseDevices('cpu,cpu,fallback'), 0)).toEqual([{ cpu: true }, { cpu: true }, { forceFallbackAdapter: true }]);
  });

  it('gives an adapter word one GPU rank per --tp degree, and a count as the engine\'s count', () => {
    const hp = parseDevices('high-performance');
    expect(hp.ranks).toBeUndefined();
    expect(devicesFor(hp, 2)).toEqual([{ powerPreference: 'high-performance' }, { powerPreference: 'high-performance' }]);
    expect(devicesFor(hp, 0)).toEqual([{ powerPreference: 'high-performance' }]);
    expect(devicesFor(parseDevices('low-power'), 1)).toEqual([{ powerPreference: 'low-power' }]);
    expect(parseDevices('3')).toEqual({ text: '3', option: 3, ranks: 3 });
  });

  it('refuses what is none of those, naming what it takes', () => {
    for (const bad of ['', 'gpus', 'cpu,tpu', '0', 'cpu,', '1.5']) {
      expect(() => parseDevices(bad), bad).toThrow(UsageError);
    }
    expect(() => parseDevices('tpu')).toThrow(/--devices is auto, gpu, cpu, .*; got "tpu"/);
  });

  it('crosses each configuration of a bench run with the --tp degrees, except where it fixes its own', () => {
    const cases = benchCases(['cpu', 'gpu,cpu', 'auto'].map(parseDevices), [1, 2]);
    expect(cases.map((c) => [c.devices?.text, c.tp])).toEqual([['cpu', 1], ['cpu', 2], ['gpu,cpu', 2], ['auto', 1], ['auto', 2]]);
    // Without --tp: 1 and 2, and auto's own choice.
    expect(benchCases(['cpu', 'auto'].map(parseDevices), undefined).map((c) => [c.devices?.text, c.tp])).toEqual([['cpu', 1], ['cpu', 2], ['auto', 0]]);
    // No --devices: the engine's default devices at each degree; a repeated value runs once.
    expect(benchCases(undefined, [1, 4])).toEqual([{ tp: 1 }, { tp: 4 }]);
    expect(benchCases(['cpu', 'cpu'].map(parseDevices), [2]).length).toBe(1);
  });
});
