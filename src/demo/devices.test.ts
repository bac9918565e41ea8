import { describe, expect, it } from 'vitest';
import type { EngineStats, RankStats } from '../index.js';
import { InvalidArgumentError } from '../errors.js';
import { CPU_ADAPTER_NAME } from '../gpu/core/adapter.js';
import { autoNote, backendSummary, cpuDegree, devicesFor, gpuKindOf, rankBackend, rankReason } from './devices.js';

const info = (o: Partial<GPUAdapterInfo & { isFallbackAdapter: boolean }>) => ({ vendor: '', architecture: '', device: '', description: '', ...o }) as GPUAdapterInfo;

function stats(adapters: string[], extra: Record<string, unknown>[] = []): EngineStats {
  const ranks = adapters.map((adapter, rank) => ({ rank, adapter, ...extra[rank] }) as unknown as RankStats);
  return {
    tensorParallel: ranks.length, loadMs: 0, ranks, schedulerMs: 0, warnings: [],
    placement: {
      mode: 'list', reason: '', adapters, split: 'even', fractions: [],
      ranks: adapters.map((adapter, rank) => ({ rank, spec: 'default', adapter, heads: [0, 1] as [number, number] })),
    },
  };
}

describe('the device selector', () => {
  it('tells a GPU from a CPU fallback adapter and from no adapter', () => {
    expect(gpuKindOf(info({ vendor: 'nvidia', architecture: 'ampere' }))).toBe('gpu');
    expect(gpuKindOf(info({ vendor: 'google', architecture: 'swiftshader' }))).toBe('fallback');
    expect(gpuKindOf(info({ vendor: 'x', isFallbackAdapter: true }))).toBe('fallback');
    expect(gpuKindOf(undefined)).toBe('none');
  });

  it('gives CPU ranks one per core, as a power of two', () => {
    expect([1, 2, 3, 4, 6, 16].map((c) => cpuDegree(c))).toEqual([1, 2, 2, 4, 4, 8]);
  });

  it('maps each choice to createEngine options; auto follows the adapter', () => {
    expect(devicesFor('cpu', 2, 'gpu')).toEqual({ devices: 'cpu', tensorParallel: 2 });
    expect(devicesFor('cpu', 'auto', 'gpu')).toEqual({ devices: 'cpu', tensorParallel: cpuDegree() });
    expect(devicesFor('gpu', 2, 'fallback')).toEqual({ devices: 2 });
    expect(devicesFor('gpu', 'auto', 'fallback')).toEqual({ devices: 'auto' });
    expect(devicesFor('auto', 2, 'fallback')).toEqual(devicesFor('cpu', 2, 'fallback'));
    expect(devicesFor('auto', 2, 'none')).toEqual(devicesFor('cpu', 2, 'none'));
    expect(devicesFor('auto', 2, 'gpu')).toEqual(devicesFor('gpu', 2, 'gpu'));
    expect(devicesFor('mixed', 4, 'gpu')).toEqual({ devices: [{ powerPreference: 'high-performance' }, { cpu: true }, { cpu: true }, { cpu: true }], tensorParallel: 4 });
    expect(devicesFor('mixed', 'auto', 'gpu').tensorParallel).toBe(2);
    expect(() => devicesFor('mixed', 1, 'gpu')).toThrow(InvalidArgumentError);
    expect(autoNote('cpu', 'fallback', 'google', 2)).toBeUndefined();
    expect(autoNote('auto', 'fallback', 'google · swiftshader', 2)).toBe('auto → 2 CPU ranks, one per core: the only WebGPU adapter (google · swiftshader) is a CPU fallback');
  });

  it('reads each rank\'s backend and reason as reported, else from the adapter name', () => {
    const s = stats([CPU_ADAPTER_NAME, 'google / swiftshader']);
    expect([rankBackend(s, 0), rankBackend(s, 1)]).toEqual(['cpu', 'gpu']);
    expect(rankReason(s, 0)).toBeUndefined();
    const told = stats(['a', 'b'], [{ backend: 'cpu', reason: 'the adapter is a CPU fallback' }, { backend: 'gpu' }]);
    expect([rankBackend(told, 0), rankBackend(told, 1)]).toEqual(['cpu', 'gpu']);
    expect(rankReason(told, 0)).toBe('the adapter is a CPU fallback');
    expect(backendSummary(['cpu', 'gpu', 'cpu'])).toBe('1 GPU + 2 CPU');
  });
});
