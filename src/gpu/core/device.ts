/**
 * Adapter and device acquisition. One `GpuContext` per device: the engine makes one in each shard
 * worker, tests and benchmarks make one in the page. It asks for the adapter's real limits (the
 * defaults cap storage bindings at 128 MiB, far below what large vocabularies need) and for the
 * optional features the kernels can use. The context carries the kernel variants to use; this
 * module only names them and guesses from the features: measuring them is ../tune.ts's job.
 */
import { WebGpuUnavailableError } from '../../errors.js';
import { createBufferPool, destroyBufferPool, type BufferPool } from './pool.js';
import { createPipelineCache, type PipelineCache } from './pipelines.js';
import { requestAdapterFor, type DeviceSpec } from './adapter.js';

/** The limits the kernels plan against, as granted to the device. */
export interface GpuLimits {
  /** Largest storage binding; the injected `bindingLimit` when one was given. */
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  maxComputeWorkgroupStorageSize: number;
  maxStorageBuffersPerShaderStage: number;
  maxComputeInvocationsPerWorkgroup: number;
  maxComputeWorkgroupSizeX: number;
  maxComputeWorkgroupSizeY: number;
  maxComputeWorkgroupsPerDimension: number;
  maxUniformBufferBindingSize: number;
  minStorageBufferOffsetAlignment: number;
  minUniformBufferOffsetAlignment: number;
}

export interface GpuFeatures {
  subgroups: boolean;
  /** From the adapter info; 0 when unknown. A workgroup of this many invocations is one subgroup. */
  subgroupMinSize: number;
  subgroupMaxSize: number;
  /** WGSL's subgroup_id / num_subgroups builtins. */
  subgroupId: boolean;
  timestampQuery: boolean;
  /** WGSL `enable f16`: f16 weights then load as halves (kernels/f16-shaders.ts); without it they are unpacked from u32 words. */
  shaderF16: boolean;
}

export interface GpuAdapterInfo {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter: boolean;
}

/** m = 1 matmul: vec4 loads reduced through workgroup memory ('tree') or within one subgroup ('subgroup'). */
export type GemvKind = 'tree' | 'subgroup';
/**
 * m > 1 matmul: 4×4 register blocks per invocation, shared-memory tiles, or an 8×16
 * ('broadcast') or 16×16 ('broadcast16') block per 4-lane subgroup sharing x through
 * subgroupBroadcast.
 */
export type GemmKind = 'regblock' | 'tiled' | 'broadcast' | 'broadcast16';
/**
 * 2 ≤ m ≤ 8 (a decode batch): the m > 1 choice ('gemm'), an 8×16 ('broadcast') or 8×32
 * ('broadcast32') block per 4-lane subgroup with the fused input (RMSNorm, SiLU·mul) done in its
 * loads, or 'prep32': the input written out once by a small pass, then the 8×32 kernel on it.
 */
export type SmallGemmKind = 'gemm' | 'broadcast' | 'broadcast32' | 'prep32';

/** The choices one rank hands to the others (`small` defaults to the adapter's heuristic). */
export type ChosenKernels = Pick<KernelChoices, 'gemm' | 'gemv'> & Partial<Pick<KernelChoices, 'small'>>;

/** Kernel variants picked for this adapter (by measurement where it matters), for reports. */
export interface KernelChoices {
  gemm: GemmKind;
  gemv: GemvKind;
  small: SmallGemmKind;
  /** Median ms of each candidate when measured (empty unless tuned, ../tune.ts). */
  measured: Record<string, number>;
}

export interface GpuContext {
  device: GPUDevice;
  adapterInfo: GpuAdapterInfo;
  limits: GpuLimits;
  features: GpuFeatures;
  pipelines: PipelineCache;
  pool: BufferPool;
  choices: KernelChoices;
  /** A 256-byte storage buffer bound where a kernel's optional input is absent. */
  dummy: GPUBuffer;
  /** Resolves when the device is lost (including on `destroyGpuContext`). */
  lost: Promise<GPUDeviceLostInfo>;
}

export interface GpuContextOptions {
  adapter?: GPURequestAdapterOptions;
  /** Which adapter, as a rank's device spec says (a filter on adapter.info included); wins over `adapter`. */
  device?: DeviceSpec;
  /** Test seam: plan as if maxStorageBufferBindingSize were this many bytes. */
  bindingLimit?: number;
  /**
   * Variants chosen earlier (e.g. by one rank's `ctx.choices`, passed to the others so that N
   * workers do not each spend time measuring on a shared machine); else the heuristic defaults.
   */
  choices?: ChosenKernels;
  label?: string;
}

const LIMIT_NAMES = [
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupStorageSize',
  'maxStorageBuffersPerShaderStage',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupsPerDimension',
  'maxUniformBufferBindingSize',
  'maxBindGroups',
  'maxStorageBuffersInShaderStage',
] as const;

/** `navigator.gpu` in a page or a worker, or undefined. */
function gpuApi(): GPU | undefined {
  const nav = (globalThis as { navigator?: Navigator }).navigator;
  return nav && 'gpu' in nav ? (nav.gpu as GPU | undefined) : undefined;
}

/** A context with the given kernel choices, or the heuristic defaults (no measuring). */
export async function openGpuContext(opts: GpuContextOptions = {}): Promise<GpuContext> {
  const gpu = gpuApi();
  if (!gpu) throw new WebGpuUnavailableError('navigator.gpu is missing');
  const adapter = opts.device ? await requestAdapterFor(gpu, opts.device) : await gpu.requestAdapter(opts.adapter);
  if (!adapter) throw new WebGpuUnavailableError('navigator.gpu gave no adapter');

  const requiredLimits: Record<string, number> = {};
  const al = adapter.limits as unknown as Record<string, number | undefined>;
  for (const name of LIMIT_NAMES) {
    const v = al[name];
    if (typeof v === 'number') requiredLimits[name] = v;
  }
  const requiredFeatures: GPUFeatureName[] = [];
  const subgroups = adapter.features.has('subgroups');
  const timestampQuery = adapter.features.has('timestamp-query');
  if (subgroups) requiredFeatures.push('subgroups' as GPUFeatureName);
  if (timestampQuery) requiredFeatures.push('timestamp-query');
  if (adapter.features.has('shader-f16')) requiredFeatures.push('shader-f16');

  const device = await adapter.requestDevice({ requiredLimits, requiredFeatures, label: opts.label });
  const dl = device.limits;
  const bindingLimit = Math.min(dl.maxStorageBufferBindingSize, opts.bindingLimit ?? Infinity);
  const limits: GpuLimits = {
    maxStorageBufferBindingSize: bindingLimit,
    maxBufferSize: dl.maxBufferSize,
    maxComputeWorkgroupStorageSize: dl.maxComputeWorkgroupStorageSize,
    maxStorageBuffersPerShaderStage: dl.maxStorageBuffersPerShaderStage,
    maxComputeInvocationsPerWorkgroup: dl.maxComputeInvocationsPerWorkgroup,
    maxComputeWorkgroupSizeX: dl.maxComputeWorkgroupSizeX,
    maxComputeWorkgroupSizeY: dl.maxComputeWorkgroupSizeY,
    maxComputeWorkgroupsPerDimension: dl.maxComputeWorkgroupsPerDimension,
    maxUniformBufferBindingSize: dl.maxUniformBufferBindingSize,
    minStorageBufferOffsetAlignment: dl.minStorageBufferOffsetAlignment,
    minUniformBufferOffsetAlignment: dl.minUniformBufferOffsetAlignment,
  };
  const info = adapter.info as GPUAdapterInfo & { subgroupMinSize?: number; subgroupMaxSize?: number };
  const features: GpuFeatures = {
    subgroups: device.features.has('subgroups'),
    subgroupMinSize: info.subgroupMinSize ?? 0,
    subgroupMaxSize: info.subgroupMaxSize ?? 0,
    subgroupId: gpu.wgslLanguageFeatures?.has('subgroup_id') ?? false,
    timestampQuery: device.features.has('timestamp-query'),
    shaderF16: device.features.has('shader-f16'),
  };
  const adapterInfo: GpuAdapterInfo = {
    vendor: info.vendor,
    architecture: info.architecture,
    device: info.device,
    description: info.description,
    isFallbackAdapter: (info as { isFallbackAdapter?: boolean }).isFallbackAdapter ?? false,
  };
  const dummy = device.createBuffer({ size: 256, usage: GPUBufferUsage.STORAGE, label: 'dummy' });
  const ctx: GpuContext = {
    device,
    adapterInfo,
    limits,
    features,
    pipelines: createPipelineCache(device),
    pool: createBufferPool(device),
    choices: defaultChoices(features, adapterInfo),
    dummy,
    lost: device.lost,
  };
  if (opts.choices) ctx.choices = { gemm: opts.choices.gemm, gemv: opts.choices.gemv, small: opts.choices.small ?? ctx.choices.small, measured: {} };
  return ctx;
}

/** A rasterizer on the CPU (SwiftShader, llvmpipe, WARP …): no workgroup memory worth having, slow barriers. */
export function isCpuAdapter(info: GpuAdapterInfo): boolean {
  return /swiftshader|llvmpipe|lavapipe|warp|cpu/i.test(`${info.vendor} ${info.architecture} ${info.description}`);
}

/**
 * Before measuring: subgroup reductions when a workgroup can be exactly one subgroup; register
 * blocking on CPU adapters (faster than tiles there), tiles on real GPUs.
 */
export function defaultChoices(f: GpuFeatures, info: GpuAdapterInfo): KernelChoices {
  const cpu = isCpuAdapter(info);
  const sg4 = f.subgroups && f.subgroupMinSize === 4 && f.subgroupMaxSize === 4;
  return {
    // 4-lane subgroups on a CPU (SwiftShader): x shared by subgroupBroadcast beats regblock.
    gemm: cpu ? (sg4 ? 'broadcast16' : 'regblock') : 'tiled',
    gemv: f.subgroups && f.subgroupMinSize >= 4 && f.subgroupMinSize <= 128 ? 'subgroup' : 'tree',
    small: cpu && sg4 ? 'broadcast' : 'gemm',
    measured: {},
  };
}

export function destroyGpuContext(ctx: GpuContext): void {
  destroyBufferPool(ctx.pool);
  ctx.pipelines.clear();
  ctx.dummy.destroy();
  ctx.device.destroy();
}
