import { describe, expect, it } from 'vitest';
import { headsFromTimes, largestBuffer, onlyCpuRanks, placeRanks, type AdapterProbe, type ProbedAdapter } from './placement.js';
import { AdapterNotFoundError, InvalidArgumentError, PlanError } from '../errors.js';
import { describeSpec, type DeviceSpec } from '../gpu/core/adapter.js';
import { llama2cConfig } from '../model/synth.js';

// stories260K's shape: 8 heads, 4 KV heads.
const config = llama2cConfig({ dim: 64, hiddenDim: 172, nLayers: 5, nHeads: 8, nKvHeads: 4, vocabSize: 512, seqLen: 512 });
const sizes = { contextLength: 512, maxBatch: 4, maxRows: 64 };

const adapter = (vendor: string, limit = 1 << 30): Omit<ProbedAdapter, 'spec'> => ({
  id: { vendor, architecture: vendor === 'google' ? 'swiftshader' : 'gpu', device: '', description: '', isFallbackAdapter: vendor === 'google' },
  limit,
});

/** A browser whose high-performance and low-power requests give the named adapters. */
function fakeProbe(hp: Omit<ProbedAdapter, 'spec'>, lp = hp, asked: string[] = []): AdapterProbe {
  return async (spec?: DeviceSpec) => {
    asked.push(describeSpec(spec));
    if (spec && 'info' in spec) {
      const a = [hp, lp].find((x) => x.id.vendor.includes(spec.info.vendor ?? ''));
      if (!a) throw new AdapterNotFoundError(describeSpec(spec), [hp.id.vendor]);
      return { spec, ...a };
    }
    return { spec, ...(spec && 'powerPreference' in spec && spec.powerPreference === 'low-power' ? lp : hp) };
  };
}
const noCalibration = async () => {
  throw new Error('calibration must not run here');
};

describe('placeRanks', () => {
  it('tensorParallel alone: N ranks on the default adapter, even split', async () => {
    const p = await placeRanks({ tensorParallel: 2 }, config, sizes, fakeProbe(adapter('google')), noCalibration);
    expect(p.specs).toEqual([undefined, undefined]);
    expect(p.fractions).toBeUndefined();
    expect(p.report.mode).toBe('tensorParallel');
    expect(p.report.reason).toContain('2 ranks on the default adapter');
  });

  it('a device count and a list', async () => {
    const count = await placeRanks({ devices: 4, tensorParallel: 4 }, config, sizes, fakeProbe(adapter('google')), noCalibration);
    expect(count.specs).toHaveLength(4);
    expect(count.report.mode).toBe('count');
    const specs: DeviceSpec[] = [{ powerPreference: 'high-performance' }, { forceFallbackAdapter: true }, { info: { vendor: 'goo' } }];
    const list = await placeRanks({ devices: specs }, config, sizes, fakeProbe(adapter('google')), noCalibration);
    expect(list.specs).toEqual(specs);
    expect(list.report.mode).toBe('list');
    expect(list.report.reason).toContain('high-performance, fallback, vendor~goo');
  });

  it('CPU ranks probe no adapter: devices "cpu" and {cpu: true} in a list', async () => {
    const never: AdapterProbe = async () => {
      throw new Error('a CPU rank must not probe');
    };
    const cpu = await placeRanks({ devices: 'cpu', tensorParallel: 2 }, config, sizes, never, noCalibration);
    expect(cpu.specs).toEqual([{ cpu: true }, { cpu: true }]);
    expect(cpu.keys).toEqual(['cpu', 'cpu']);
    expect(cpu.report.mode).toBe('cpu');
    expect(cpu.report.adapters).toEqual(['CPU (WebAssembly SIMD)']);
    expect(onlyCpuRanks('cpu')).toBe(true);
    expect(onlyCpuRanks([{ cpu: true }])).toBe(true);
    const asked: string[] = [];
    const mixed = await placeRanks({ devices: [{ forceFallbackAdapter: true }, { cpu: true }] }, config, sizes, fakeProbe(adapter('google'), undefined, asked), noCalibration);
    expect(asked).toEqual(['fallback']);
    expect(mixed.keys[1]).toBe('cpu');
    expect(mixed.report.reason).toContain('fallback, cpu');
    expect(onlyCpuRanks([{ forceFallbackAdapter: true }, { cpu: true }])).toBe(false);
    expect(onlyCpuRanks(undefined)).toBe(false);
  });

  it('contradictions are InvalidArgumentErrors naming both options', async () => {
    const probe = fakeProbe(adapter('google'));
    const cases: Parameters<typeof placeRanks>[0][] = [
      { devices: 2, tensorParallel: 4 },
      { devices: [{ powerPreference: 'low-power' }], tensorParallel: 2 },
      { devices: 3, split: [1, 1] },
      { tensorParallel: 2, split: [1, 1, 1] },
      { devices: 'auto', tensorParallel: 2, split: [1, 2, 1] },
    ];
    for (const c of cases) {
      const e = await placeRanks(c, config, sizes, probe, noCalibration).catch((x: unknown) => x);
      expect(e, JSON.stringify(c)).toBeInstanceOf(InvalidArgumentError);
      expect((e as Error).message).toMatch(/says \d+ ranks but .* says \d+/);
    }
    for (const bad of [[{ powerPreference: 'fast' }], [{ info: { colour: 'red' } }], [{}], [], 0, 1.5]) {
      await expect(placeRanks({ devices: bad as never }, config, sizes, probe, noCalibration)).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    await expect(placeRanks({ split: [0.5, -1] }, config, sizes, probe, noCalibration)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('a filter that matches nothing fails before any worker starts', async () => {
    const e = await placeRanks({ devices: [{ info: { vendor: 'nvidia' } }] }, config, sizes, fakeProbe(adapter('google')), noCalibration).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(AdapterNotFoundError);
    expect((e as AdapterNotFoundError).code).toBe('NO_ADAPTER');
  });

  it('auto on one adapter: TP=1, without measuring', async () => {
    const asked: string[] = [];
    const p = await placeRanks({ devices: 'auto' }, config, sizes, fakeProbe(adapter('google'), adapter('google'), asked), noCalibration);
    expect(asked).toEqual(['high-performance', 'low-power']);
    expect(p.specs).toHaveLength(1);
    expect(p.report.reason).toContain('high-performance and low-power are the same adapter');
    expect(p.report.reason).toContain('TP=1');
    // tensorParallel: "auto" means the same.
    expect((await placeRanks({ tensorParallel: 'auto' }, config, sizes, fakeProbe(adapter('google')), noCalibration)).specs).toHaveLength(1);
  });

  it('auto on one adapter too small for TP=1 picks the smallest degree that fits', async () => {
    const kv1 = largestBuffer(config, 1, sizes);
    const kv2 = largestBuffer(config, 2, sizes);
    expect(kv1.what).toBe('the KV cache of one layer');
    expect(kv1.bytes).toBe(4 * 4 * 512 * 8 * 4);
    expect(kv2.bytes).toBe(kv1.bytes / 2);
    const small = adapter('google', kv1.bytes - 1);
    const p = await placeRanks({ devices: 'auto' }, config, sizes, fakeProbe(small), noCalibration);
    expect(p.specs).toHaveLength(2);
    expect(p.report.reason).toMatch(/over its limit of \d+: TP=2/);
    await expect(placeRanks({ devices: 'auto' }, config, sizes, fakeProbe(adapter('google', 1000)), noCalibration)).rejects.toBeInstanceOf(PlanError);
  });

  it('auto on two adapters: one rank each, heads by measured speed', async () => {
    const measured: string[] = [];
    const p = await placeRanks({ devices: 'auto' }, config, sizes, fakeProbe(adapter('nvidia'), adapter('intel')), async (specs) => {
      measured.push(...specs.map(describeSpec));
      return specs.map((s) => (describeSpec(s) === 'high-performance' ? 1 : 3));
    });
    expect(measured).toEqual(['high-performance', 'low-power']);
    expect(p.specs).toEqual([{ powerPreference: 'high-performance' }, { powerPreference: 'low-power' }]);
    expect(p.fractions).toEqual([6 / 8, 2 / 8]);
    expect(p.report.split).toBe('calibrated');
    expect(p.report.calibrationMs).toEqual([1, 3]);
    expect(p.report.reason).toContain('2 distinct adapters');
    expect(p.report.reason).toContain('query heads 6/2');
  });

  it('auto with a count deals ranks round-robin and measures nothing', async () => {
    const p = await placeRanks({ devices: 'auto', tensorParallel: 4 }, config, sizes, fakeProbe(adapter('nvidia'), adapter('intel')), noCalibration);
    expect(p.specs.map(describeSpec)).toEqual(['high-performance', 'low-power', 'high-performance', 'low-power']);
    expect(p.keys[0]).not.toBe(p.keys[1]);
    expect(p.keys[0]).toBe(p.keys[2]);
  });
});

describe('headsFromTimes', () => {
  it('splits heads in proportion to speed, whole heads, stable under small noise', () => {
    expect(headsFromTimes([1, 1], 8)).toEqual([4, 4]);
    expect(headsFromTimes([1.05, 0.97], 8)).toEqual([4, 4]);
    expect(headsFromTimes([1.2, 1], 8)).toEqual([4, 4]);
    expect(headsFromTimes([1.3, 1], 8)).toEqual([3, 5]);
    expect(headsFromTimes([1, 2, 2], 8)).toEqual([4, 2, 2]);
    expect(headsFromTimes([1, 100], 8)).toEqual([8, 0]);
  });
});
