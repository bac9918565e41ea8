/**
 * Which adapter a rank runs on. A `DeviceSpec` names one the way WebGPU lets a page ask: by
 * power preference, as the browser's CPU fallback, or by what `adapter.info` says. WebGPU has no
 * adapter list, so a filter is matched against the adapters the browser gives for each way of
 * asking. Adapters and devices cannot be transferred between workers, so each shard worker
 * resolves its own spec; the main thread resolves the same specs to decide placement.
 */
import { AdapterNotFoundError, InvalidArgumentError } from '../../errors.js';

/** Case-insensitive substrings that `adapter.info`'s fields must contain. */
export interface AdapterFilter {
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
}

/**
 * A rank's device: a WebGPU adapter (by power preference, as the CPU fallback, or by a filter on
 * `adapter.info`), or `{cpu: true}`, a CPU rank that computes with WebAssembly SIMD and asks
 * for no adapter at all.
 */
export type DeviceSpec =
  | { powerPreference: GPUPowerPreference }
  | { forceFallbackAdapter: true }
  | { info: AdapterFilter }
  | { cpu: true };

/** True for a CPU rank's spec, which needs no WebGPU. */
export function isCpuSpec(spec: DeviceSpec | undefined): spec is { cpu: true } {
  return !!spec && 'cpu' in spec;
}

/** What a CPU rank reports as its adapter. */
export const CPU_ADAPTER_NAME = 'CPU (WebAssembly SIMD)';

/** What computes a rank: WebGPU, or WebAssembly SIMD on its own core. */
export type RankBackend = 'gpu' | 'cpu';

/** The backend a rank of `spec` runs. */
export function backendOf(spec: DeviceSpec | undefined): RankBackend {
  return isCpuSpec(spec) ? 'cpu' : 'gpu';
}

/** The fields of `adapter.info` that tell adapters apart. */
export interface AdapterIdentity {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter: boolean;
}

const FILTER_KEYS = ['vendor', 'architecture', 'device', 'description'] as const;

/** Every way of asking for an adapter, in the order a filter tries them. */
const ASK: readonly (GPURequestAdapterOptions | undefined)[] = [
  undefined,
  { powerPreference: 'high-performance' },
  { powerPreference: 'low-power' },
  { forceFallbackAdapter: true },
];

/** Throws InvalidArgumentError unless `spec` is one of the four shapes. */
export function checkDeviceSpec(spec: unknown, where = 'device spec'): DeviceSpec {
  const s = spec as Record<string, unknown> | null;
  const keys = s && typeof s === 'object' ? Object.keys(s) : [];
  const expected = `expected {powerPreference: 'high-performance' | 'low-power'}, {forceFallbackAdapter: true}, {info: {vendor?, architecture?, device?, description?}} or {cpu: true}`;
  if (keys.length !== 1) throw new InvalidArgumentError(`${where}: ${expected}, got ${JSON.stringify(spec)}`);
  if ('powerPreference' in s! && (s.powerPreference === 'high-performance' || s.powerPreference === 'low-power')) return s as DeviceSpec;
  if ('forceFallbackAdapter' in s! && s.forceFallbackAdapter === true) return s as DeviceSpec;
  if ('cpu' in s! && s.cpu === true) return s as DeviceSpec;
  if ('info' in s! && s.info && typeof s.info === 'object') {
    const f = s.info as Record<string, unknown>;
    const bad = Object.keys(f).filter((k) => !(FILTER_KEYS as readonly string[]).includes(k) || typeof f[k] !== 'string');
    if (bad.length === 0 && Object.keys(f).length > 0) return s as DeviceSpec;
  }
  throw new InvalidArgumentError(`${where}: ${expected}, got ${JSON.stringify(spec)}`);
}

/** A short label: `high-performance`, `low-power`, `fallback`, `cpu`, or `vendor~nvidia`. */
export function describeSpec(spec: DeviceSpec | undefined): string {
  if (!spec) return 'default';
  if (isCpuSpec(spec)) return 'cpu';
  if ('powerPreference' in spec) return spec.powerPreference;
  if ('forceFallbackAdapter' in spec) return 'fallback';
  return FILTER_KEYS.filter((k) => spec.info[k] !== undefined).map((k) => `${k}~${spec.info[k]}`).join(',');
}

export function identityOf(a: Pick<GPUAdapter, 'info'>): AdapterIdentity {
  const i = a.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
  return {
    vendor: i.vendor ?? '',
    architecture: i.architecture ?? '',
    device: i.device ?? '',
    description: i.description ?? '',
    isFallbackAdapter: i.isFallbackAdapter ?? false,
  };
}

/** Software renderers that draw on the CPU, by the names their `adapter.info` gives. */
const SOFTWARE_NAMES = /swiftshader|llvmpipe|lavapipe|microsoft basic render/i;

/**
 * True for an adapter that computes on the CPU: the browser's fallback adapter, or a software
 * renderer (SwiftShader, llvmpipe) even where it is not flagged as the fallback. Its WebGPU
 * ranks share the cores a CPU rank would have to itself.
 */
export function isSoftwareAdapter(id: AdapterIdentity): boolean {
  return id.isFallbackAdapter || FILTER_KEYS.some((k) => SOFTWARE_NAMES.test(id[k]));
}

/** Equal keys mean the same adapter: what `"auto"` uses to count distinct devices. */
export function adapterKey(id: AdapterIdentity): string {
  return [id.vendor, id.architecture, id.device, id.description, id.isFallbackAdapter ? 'fallback' : ''].join('|');
}

/** A readable name: `google / swiftshader`, with `(fallback)` for a CPU fallback adapter. */
export function adapterName(id: AdapterIdentity): string {
  const name = [id.vendor, id.architecture, id.device, id.description].filter(Boolean).join(' / ') || 'unnamed adapter';
  return id.isFallbackAdapter ? `${name} (fallback)` : name;
}

export function matchesFilter(id: AdapterIdentity, f: AdapterFilter): boolean {
  return FILTER_KEYS.every((k) => f[k] === undefined || id[k].toLowerCase().includes(f[k]!.toLowerCase()));
}

/**
 * The adapter `spec` names (the default one when there is none). A filter takes the first
 * adapter, over every way of asking, whose info matches; none matching is an
 * `AdapterNotFoundError` listing what was seen.
 */
export async function requestAdapterFor(gpu: GPU, spec?: DeviceSpec): Promise<GPUAdapter | null> {
  if (!spec) return gpu.requestAdapter();
  if (isCpuSpec(spec)) throw new InvalidArgumentError('a CPU rank asks for no WebGPU adapter');
  if (!('info' in spec)) return gpu.requestAdapter(spec);
  const seen: string[] = [];
  for (const ask of ASK) {
    const a = await gpu.requestAdapter(ask);
    if (!a) continue;
    const id = identityOf(a);
    if (matchesFilter(id, spec.info)) return a;
    const name = adapterName(id);
    if (!seen.includes(name)) seen.push(name);
  }
  throw new AdapterNotFoundError(describeSpec(spec), seen);
}
