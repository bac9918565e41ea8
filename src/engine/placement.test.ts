import { describe, expect, it } from 'vitest';
import {
  chooseTimed, headsFromTimes, largestBuffer, placeRanks, timedPlacement,
  type AdapterProbe, type Placement, type PlacementDecision, type PlacementEnv, type ProbedAdapter, type TimedChoice,
} from './placement.js';
import { AdapterNotFoundError, InvalidArgumentError, PlanError, WebGpuUnavailableError } from '../errors.js';
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
const never: AdapterProbe = async () => {
  throw new Error('nothing may be probed here');
};

function one(d: PlacementDecision): Placement {
  if ('candidates' in d) throw new Error(`expected one placement, got candidates ${d.labels.join(', ')}`);
  return d;
}
function timed(d: PlacementDecision): TimedChoice {
  if (!('candidates' in d)) throw new Error(`expected candidates to time, got one placement: ${d.report.reason}`);
  return d;
}
/** placeRanks that must decide without timing. */
async function place(...a: Parameters<typeof placeRanks>): Promise<Placement> {
  return one(await placeRanks(...a));
}

describe('placeRanks', () => {
  it('devices "gpu": N ranks on the default adapter, even split', async () => {
    const p = await place({ devices: 'gpu', tensorParallel: 2 }, config, sizes, fakeProbe(adapter('google')), noCalibration);
    expect(p.specs).toEqual([undefined, undefined]);
    expect(p.fractions).toBeUndefined();
    expect(p.report.mode).toBe('gpu');
    expect(p.report.reason).toContain('2 ranks on the default adapter');
  });

  it('a device count and a list', async () => {
    const count = await place({ devices: 4, tensorParallel: 4 }, config, sizes, fakeProbe(adapter('google')), noCalibration);
    expect(count.specs).toHaveLength(4);
    expect(count.report.mode).toBe('count');
    const specs: DeviceSpec[] = [{ powerPreference: 'high-performance' }, { forceFallbackAdapter: true }, { info: { vendor: 'goo' } }];
    const list = await place({ devices: specs }, config, sizes, fakeProbe(adapter('google')), noCalibration);
    expect(list.specs).toEqual(specs);
    expect(list.report.mode).toBe('list');
    expect(list.report.reason).toContain('high-performance, fallback, vendor~goo');
  });

  it('CPU ranks probe no adapter: devices "cpu" and {cpu: true} in a list', async () => {
    const cpu = await place({ devices: 'cpu', tensorParallel: 2 }, config, sizes, never, noCalibration);
    expect(cpu.specs).toEqual([{ cpu: true }, { cpu: true }]);
    expect(cpu.keys).toEqual(['cpu', 'cpu']);
    expect(cpu.report.mode).toBe('cpu');
    expect(cpu.report.adapters).toEqual(['CPU (WebAssembly SIMD)']);
    const asked: string[] = [];
    const mixed = await place({ devices: [{ forceFallbackAdapter: true }, { cpu: true }] }, config, sizes, fakeProbe(adapter('google'), undefined, asked), noCalibration);
    expect(asked).toEqual(['fallback']);
    expect(mixed.keys[1]).toBe('cpu');
    expect(mixed.report.reason).toContain('fallback, cpu');
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
    // per axis: known axes, positive shares, one rank count
    for (const split of [{ heads: [1, 1], vocab: [1, 1, 1] }, { kvHeads: [1, 1] }, {}, { heads: [1, 0] }, 'heads=1,1'] as never[]) {
      await expect(placeRanks({ split }, config, sizes, probe, noCalibration), JSON.stringify(split)).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    await expect(placeRanks({ tensorParallel: 3, split: { hidden: [1, 1] } }, config, sizes, probe, noCalibration)).rejects.toThrow(/tensorParallel says 3 ranks but split says 2/);
    // the plan's validator, naming the option and throwing InvalidArgumentErrors
    const why = async (split: unknown) => ((await placeRanks({ split: split as never }, config, sizes, probe, noCalibration).catch((x: unknown) => x)) as Error).message;
    expect(await why([0.5, -1])).toMatch(/^split must be a non-empty list of positive numbers, got \[0\.5,-1\]/);
    expect(await why({ kvHeads: [1, 1] })).toMatch(/^split has no axis kvHeads: the axes are heads, hidden, vocab\. KV heads follow the query heads/);
    expect(await why({ heads: [1, 1], vocab: [1, 1, 1] })).toMatch(/^the vocab shares name 3 ranks, but the split has 2/);
    expect(await why({ heads: [1, 0] })).toMatch(/^the heads shares must be a non-empty list of positive numbers/);
    expect(await why({})).toMatch(/^split names no axis/);
    await expect(placeRanks({ devices: 'gpu', split: { heads: [2, 1], kvHeads: undefined } as never }, config, sizes, probe, noCalibration)).resolves.toMatchObject({ axes: { heads: [2, 1] } });
  });

  it('a filter that matches nothing fails before any worker starts', async () => {
    const e = await placeRanks({ devices: [{ info: { vendor: 'nvidia' } }] }, config, sizes, fakeProbe(adapter('google')), noCalibration).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(AdapterNotFoundError);
    expect((e as AdapterNotFoundError).code).toBe('NO_ADAPTER');
  });

  it('auto on one GPU adapter (and no spare core): TP=1, without measuring', async () => {
    const asked: string[] = [];
    const p = await place({ devices: 'auto' }, config, sizes, fakeProbe(adapter('nvidia'), adapter('nvidia'), asked), noCalibration);
    expect(asked).toEqual(['high-performance', 'low-power']);
    expect(p.specs).toHaveLength(1);
    expect(p.report.reason).toContain('high-performance and low-power are the same adapter');
    expect(p.report.reason).toContain('TP=1');
    // tensorParallel: "auto" means the same.
    expect((await place({ tensorParallel: 'auto' }, config, sizes, fakeProbe(adapter('nvidia')), noCalibration)).specs).toHaveLength(1);
  });

  it('auto on one adapter too small for TP=1 picks the smallest degree that fits', async () => {
    const kv1 = largestBuffer(config, 1, sizes);
    const kv2 = largestBuffer(config, 2, sizes);
    expect(kv1.what).toBe('the KV cache of one layer');
    expect(kv1.bytes).toBe(4 * 4 * 512 * 8 * 4);
    expect(kv2.bytes).toBe(kv1.bytes / 2);
    const small = adapter('nvidia', kv1.bytes - 1);
    const p = await place({ devices: 'auto' }, config, sizes, fakeProbe(small), noCalibration);
    expect(p.specs).toHaveLength(2);
    expect(p.report.reason).toMatch(/over its limit of \d+: TP=2/);
    await expect(placeRanks({ devices: 'auto' }, config, sizes, fakeProbe(adapter('nvidia', 1000)), noCalibration)).rejects.toBeInstanceOf(PlanError);
  });

  it('auto on two adapters: one rank each, heads by measured speed', async () => {
    const measured: string[] = [];
    const p = await place({ devices: 'auto' }, config, sizes, fakeProbe(adapter('nvidia'), adapter('intel')), async (specs) => {
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
    const p = await place({ devices: 'auto', tensorParallel: 4 }, config, sizes, fakeProbe(adapter('nvidia'), adapter('intel')), noCalibration);
    expect(p.specs.map(describeSpec)).toEqual(['high-performance', 'low-power', 'high-performance', 'low-power']);
    expect(p.keys[0]).not.toBe(p.keys[1]);
    expect(p.keys[0]).toBe(p.keys[2]);
  });
});

const env = (o: Partial<PlacementEnv>): PlacementEnv => ({ hasGpu: true, cores: 1, kvBytes: 4, ...o });
const CPU = 'CPU (WebAssembly SIMD)';

describe('auto chooses the kind of rank', () => {
  it('no WebGPU: CPU ranks, every degree up to one per core timed, nothing probed', async () => {
    const t = timed(await placeRanks({}, config, sizes, never, noCalibration, env({ hasGpu: false, cores: 4 })));
    expect(t.labels).toEqual(['1 CPU rank', '2 CPU ranks', '4 CPU ranks']);
    expect(t.candidates.map((c) => c.specs)).toEqual([[{ cpu: true }], [{ cpu: true }, { cpu: true }], Array.from({ length: 4 }, () => ({ cpu: true }))]);
    for (const c of t.candidates) {
      expect(c.report.mode).toBe('auto');
      expect(c.report.adapters).toEqual([CPU]);
      expect(c.keys.every((k) => k === 'cpu')).toBe(true);
    }
    expect(t.why).toContain('no WebGPU (navigator.gpu is missing): CPU ranks');
    // 3 cores: 3 does not divide the 8 heads, so 1 and 2.
    expect(timed(await placeRanks({ devices: 'auto' }, config, sizes, never, noCalibration, env({ hasGpu: false, cores: 3 }))).labels).toEqual(['1 CPU rank', '2 CPU ranks']);
  });

  it('devices "cpu" with tensorParallel "auto": the CPU degrees up to one per core, timed, on a page with a GPU too', async () => {
    const t = timed(await placeRanks({ devices: 'cpu', tensorParallel: 'auto' }, config, sizes, never, noCalibration, env({ hasGpu: true, cores: 2 })));
    expect(t.labels).toEqual(['1 CPU rank', '2 CPU ranks']);
    expect(t.why).toContain('devices: "cpu": CPU ranks');
    // what CPU ranks cannot run yet is refused before any worker starts
    await expect(placeRanks({ devices: 'cpu', tensorParallel: 'auto' }, config, sizes, never, noCalibration, env({ cores: 2, cpuBlocker: 'int8 activations' }))).rejects.toThrow(/devices "cpu": CPU ranks do not run int8 activations/);
    // without "auto" the count stays the given one, or 1
    expect((await place({ devices: 'cpu' }, config, sizes, never, noCalibration, env({ cores: 2 }))).specs).toEqual([{ cpu: true }]);
  });

  it('one core: one CPU rank, nothing to time', async () => {
    const p = await place({}, config, sizes, never, noCalibration, env({ hasGpu: false, cores: 1 }));
    expect(p.specs).toEqual([{ cpu: true }]);
    expect(p.report.reason).toMatch(/CPU ranks .*: 1 CPU rank$/);
  });

  it('a fallback adapter, or a SwiftShader one not flagged as fallback, counts as no GPU', async () => {
    const fallback = timed(await placeRanks({}, config, sizes, fakeProbe(adapter('google')), noCalibration, env({ cores: 2 })));
    expect(fallback.labels).toEqual(['1 CPU rank', '2 CPU ranks']);
    expect(fallback.why).toContain('no GPU: the WebGPU adapter, google / swiftshader (fallback), computes on the CPU');
    const unflagged = { id: { vendor: 'Google Inc.', architecture: '', device: '', description: 'SwiftShader Device (Subzero)', isFallbackAdapter: false }, limit: 1 << 30 };
    expect(timed(await placeRanks({}, config, sizes, fakeProbe(unflagged), noCalibration, env({ cores: 2 }))).labels).toEqual(['1 CPU rank', '2 CPU ranks']);
    // No adapter at all, though navigator.gpu exists.
    const none: AdapterProbe = async () => null;
    expect(timed(await placeRanks({}, config, sizes, none, noCalibration, env({ cores: 2 }))).why).toContain('navigator.gpu gave no adapter');
  });

  it('a rank count fixes the degree: that many CPU ranks, untimed', async () => {
    const p = await place({ tensorParallel: 2 }, config, sizes, never, noCalibration, env({ hasGpu: false, cores: 4 }));
    expect(p.specs).toEqual([{ cpu: true }, { cpu: true }]);
    expect(p.report.reason).toContain('2 CPU ranks (WebAssembly SIMD), as tensorParallel says');
    const s = await place({ split: [3, 1] }, config, sizes, never, noCalibration, env({ hasGpu: false, cores: 4 }));
    expect(s.fractions).toEqual([3, 1]);
    expect(s.report.split).toBe('explicit');
    const a = await place({ split: { heads: [1, 1], hidden: [3, 1] } }, config, sizes, never, noCalibration, env({ hasGpu: false, cores: 4 }));
    expect(a).toMatchObject({ specs: [{ cpu: true }, { cpu: true }], axes: { heads: [1, 1], hidden: [3, 1] }, report: { split: 'explicit' } });
    expect(a.fractions).toBeUndefined();
  });

  it('what CPU ranks cannot run sends auto to GPU ranks, and says why', async () => {
    const blocked = env({ cores: 2, cpuBlocker: 'quantised weights (q8_0)' });
    const onFallback = await place({}, config, sizes, fakeProbe(adapter('google')), noCalibration, blocked);
    expect(onFallback.specs).toEqual([{ powerPreference: 'high-performance' }]);
    expect(onFallback.report.reason).toContain('CPU ranks do not run quantised weights (q8_0) yet: GPU ranks');
    const onGpu = await place({}, config, sizes, fakeProbe(adapter('nvidia')), noCalibration, blocked);
    expect(onGpu.specs).toHaveLength(1);
    expect(onGpu.report.reason).toContain('no CPU ranks, which do not run quantised weights (q8_0) yet');
    const e = await placeRanks({}, config, sizes, never, noCalibration, { ...blocked, hasGpu: false }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(WebGpuUnavailableError);
    expect((e as Error).message).toContain('CPU ranks do not run quantised weights (q8_0) yet');
  });

  it('a GPU and a spare core: GPU alone against GPU + a CPU rank split by measured speed', async () => {
    const measured: string[][] = [];
    const calibrate = async (specs: (DeviceSpec | undefined)[]) => {
      measured.push(specs.map(describeSpec));
      return specs.map((s) => (describeSpec(s) === 'cpu' ? 3 : 1));
    };
    const t = timed(await placeRanks({}, config, sizes, fakeProbe(adapter('nvidia')), calibrate, env({ cores: 2 })));
    expect(measured).toEqual([['high-performance', 'cpu']]);
    expect(t.labels).toEqual(['GPU alone', 'GPU + 1 CPU rank']);
    const [gpu, mixed] = t.candidates;
    expect(gpu!.specs).toEqual([{ powerPreference: 'high-performance' }]);
    expect(mixed!.specs).toEqual([{ powerPreference: 'high-performance' }, { cpu: true }]);
    expect(mixed!.fractions).toEqual([6 / 8, 2 / 8]);
    expect(mixed!.report.reason).toContain('query heads 6/2 by measured speed');
    // CPU ranks join only when the timed steps are faster with them.
    expect(timedPlacement(t, [5, 4], 4, 900).specs).toHaveLength(2);
    expect(timedPlacement(t, [5, 4.8], 4, 900).specs).toHaveLength(1);
    // A CPU rank too slow for a whole head never becomes a candidate.
    const slow = await place({}, config, sizes, fakeProbe(adapter('nvidia')), async (specs) => specs.map((s) => (describeSpec(s) === 'cpu' ? 100 : 1)), env({ cores: 2 }));
    expect(slow.specs).toHaveLength(1);
    expect(slow.report.reason).toContain('too slow for a whole head, so none joins');
    // A "GPU" slower than a core still keeps a head in the candidate: the timed steps decide.
    const slowGpu = timed(await placeRanks({}, config, sizes, fakeProbe(adapter('nvidia')), async (specs) => specs.map((s) => (describeSpec(s) === 'cpu' ? 1 : 100)), env({ cores: 2 })));
    expect(slowGpu.candidates[1]!.fractions).toEqual([1 / 8, 7 / 8]);
  });

  it('an explicit "gpu" without WebGPU fails typed, naming CPU ranks as the remedy; "cpu" needs none', async () => {
    const e = await placeRanks({ devices: 'gpu' }, config, sizes, never, noCalibration, env({ hasGpu: false })).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(WebGpuUnavailableError);
    expect((e as WebGpuUnavailableError).code).toBe('NO_WEBGPU');
    expect((e as Error).message).toContain('devices: "gpu" asks for WebGPU ranks');
    expect((e as WebGpuUnavailableError).remedy).toContain('devices: "cpu"');
    await expect(placeRanks({ devices: [{ cpu: true }, { forceFallbackAdapter: true }] }, config, sizes, never, noCalibration, env({ hasGpu: false }))).rejects.toBeInstanceOf(WebGpuUnavailableError);
    expect((await place({ devices: 'cpu', tensorParallel: 2 }, config, sizes, never, noCalibration, env({ hasGpu: false }))).specs).toHaveLength(2);
  });
});

describe('timed choices', () => {
  it('the first candidate wins unless a later one is faster by the margin', () => {
    expect(chooseTimed([10])).toBe(0);
    expect(chooseTimed([10, 6])).toBe(1);
    expect(chooseTimed([10, 9.5])).toBe(0);
    expect(chooseTimed([10, 6, 5.8])).toBe(1);
    expect(chooseTimed([10, 6, 5])).toBe(2);
    expect(chooseTimed([Infinity, 7])).toBe(1);
  });

  it('the chosen placement reports every timing and why', async () => {
    const t = timed(await placeRanks({}, config, sizes, never, noCalibration, env({ hasGpu: false, cores: 2 })));
    const p = timedPlacement(t, [8, 5], 4, 1234);
    expect(p.specs).toHaveLength(2);
    expect(p.report.timing).toEqual({
      steps: 4, totalMs: 1234, chosen: 1,
      candidates: [{ label: '1 CPU rank', backends: ['cpu'], msPerStep: 8 }, { label: '2 CPU ranks', backends: ['cpu', 'cpu'], msPerStep: 5 }],
    });
    expect(p.report.reason).toContain('4 decode steps timed on each (1 CPU rank 8.00 ms, 2 CPU ranks 5.00 ms per step; 1.2 s with the loads): 2 CPU ranks');
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
