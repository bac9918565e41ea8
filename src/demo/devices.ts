/**
 * The device selector: which kind of rank the demo asks `createEngine` for (auto, GPU, CPU, or a
 * GPU rank beside CPU ranks), and what each rank turned out to be, as the engine reports it.
 */
import type { DeviceSpec, EngineOptions, EngineStats } from '../index.js';
import { InvalidArgumentError } from '../errors.js';
import { identityOf, isSoftwareAdapter } from '../gpu/core/adapter.js';

export type DeviceChoice = 'auto' | 'gpu' | 'cpu' | 'mixed';
export type Backend = 'cpu' | 'gpu';

/** What this browser's best adapter is: a real GPU, a CPU fallback (SwiftShader), or none at all. */
export type GpuKind = 'gpu' | 'fallback' | 'none';

export const DEVICE_CHOICES: readonly DeviceChoice[] = ['auto', 'gpu', 'cpu', 'mixed'];

/** By the engine's own test, so the page names an adapter as `auto` will treat it. */
export function gpuKindOf(info: GPUAdapterInfo | undefined): GpuKind {
  if (!info) return 'none';
  return isSoftwareAdapter(identityOf({ info })) ? 'fallback' : 'gpu';
}

const GPU_RANK: DeviceSpec = { powerPreference: 'high-performance' };
const CPU_RANK: DeviceSpec = { cpu: true };

/** The selector's choice and the TP control as `createEngine`'s `devices` and `tensorParallel`. */
export function devicesFor(choice: DeviceChoice, tp: number | 'auto'): Pick<EngineOptions, 'devices' | 'tensorParallel'> {
  switch (choice) {
    case 'auto':
      // The engine's auto picks the kind of rank and, with tensor parallel auto, times the degrees.
      return { devices: 'auto', tensorParallel: tp };
    case 'gpu':
      return tp === 'auto' ? { devices: 'gpu' } : { devices: 'gpu', tensorParallel: tp };
    case 'cpu':
      // With tensor parallel auto the engine times the CPU degrees, as under auto.
      return { devices: 'cpu', tensorParallel: tp };
    case 'mixed': {
      const n = tp === 'auto' ? 2 : tp;
      if (n < 2) throw new InvalidArgumentError('GPU + CPU needs at least 2 ranks, got tensor parallel 1', 'Pick tensor parallel 2 or more, or auto');
      return { devices: [GPU_RANK, ...Array.from({ length: n - 1 }, () => CPU_RANK)], tensorParallel: n };
    }
  }
}

/** Whether a rank computes on the CPU (WebAssembly SIMD) or on a GPU adapter, as the engine reports it. */
export function rankBackend(stats: EngineStats, rank: number): Backend {
  return stats.ranks[rank]?.backend ?? 'gpu';
}

/** `CPU` or `GPU`, and what runs it: WebAssembly SIMD, or the adapter's name. */
export function backendLabel(backend: Backend, adapter: string): { kind: string; device: string } {
  return backend === 'cpu' ? { kind: 'CPU', device: 'WebAssembly SIMD' } : { kind: 'GPU', device: adapter };
}

/** `2 CPU`, `1 GPU + 1 CPU`: the kinds of the engine's ranks, GPU first. */
export function backendSummary(backends: readonly Backend[]): string {
  const count = (b: Backend) => backends.filter((x) => x === b).length;
  return (['gpu', 'cpu'] as const).filter((b) => count(b) > 0).map((b) => `${count(b)} ${b.toUpperCase()}`).join(' + ');
}
