import { describe, expect, it } from 'vitest';
import type { EngineStats, RankStats } from '../index.js';
import { InvalidArgumentError } from '../errors.js';
import { backendSummary, devicesFor, gpuKindOf, rankBackend } from './devices.js';

const info = (o: Partial<GPUAdapterInfo & { isFallbackAdapter: boolean }>) => ({ vendor: '', architecture: '', device: '', description: '', ...o }) as GPUAdapterInfo;

function stats(adapters: string[], extra: Record<string, unknown>[] = []): EngineStats {
  const ranks = adapters.map((adapter, rank) => ({ rank, adapter, ...extra[rank] }) as unknown as RankStats);
  return {
    tensorParallel: ranks.length, loadMs: 0, ranks, schedulerMs: 0, warnings: [],
    placement: {
      mode: 'list', reason: '', adapters, split: 'even', fractions: [], activations: 'f32', activationsReason: '',
      ranks: adapters.map((adapter, rank) => ({ rank, backend: 'gpu' as const, spec: 'default', adapter, heads: [0, 1] as [number, number], hidden: [0, 1] as [number, number], vocab: [0, 1] as [number, number] })),
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

  it('maps each choice to createEngine options; auto follows the adapter', () => {
    expect(devicesFor('cpu', 2)).toEqual({ devices: 'cpu', tensorParallel: 2 });
    expect(devicesFor('cpu', 'auto')).toEqual({ devices: 'cpu', tensorParallel: 'auto' });
    expect(devicesFor('gpu', 2)).toEqual({ devices: 'gpu', tensorParallel: 2 });
    expect(devicesFor('gpu', 'auto')).toEqual({ devices: 'gpu' });
    expect(devicesFor('auto', 2)).toEqual({ devices: 'auto', tensorParallel: 2 });
    expect(devicesFor('auto', 'auto')).toEqual({ devices: 'auto', tensorParallel: 'auto' });
    expect(devicesFor('mixed', 4)).toEqual({ devices: [{ powerPreference: 'high-performance' }, { cpu: true }, { cpu: true }, { cpu: true }], tensorParallel: 4 });
    expect(devicesFor('mixed', 'auto').tensorParallel).toBe(2);
    expect(() => devicesFor('mixed', 1)).toThrow(InvalidArgumentError);
  });

  it('reads each rank\'s backend as the engine reports it', () => {
    const told = stats(['WebAssembly SIMD', 'google / swiftshader'], [{ backend: 'cpu' }, { backend: 'gpu' }]);
    expect([rankBackend(told, 0), rankBackend(told, 1)]).toEqual(['cpu', 'gpu']);
    expect(backendSummary(['cpu', 'gpu', 'cpu'])).toBe('1 GPU + 2 CPU');
  });
});
