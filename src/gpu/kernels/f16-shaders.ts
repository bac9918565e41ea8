/**
 * Which f16 kernels a device runs, and their WGSL. Pure (no GPU calls), so the choice and the
 * shader text of both variants are unit-tested in Node (f16-shaders.test.ts), including the
 * native ones this repo's only adapter (SwiftShader, no shader-f16) cannot compile.
 *
 * 'packed' (every adapter): halves are read from u32 words with unpack2x16float, core WGSL.
 * 'native' (devices with shader-f16): the same buffers declared as f16 and loaded as halves.
 * Both keep the arithmetic in f32 (matmul_w_f16_native.wgsl says why), so they compute the same.
 */
import commonSrc from '../../../shaders/common.wgsl?raw';
import matmulCommonSrc from '../../../shaders/matmul_common.wgsl?raw';
import xF32Src from '../../../shaders/matmul_x_f32.wgsl?raw';
import xVec4Src from '../../../shaders/matmul_x_vec4.wgsl?raw';
import f16Src from '../../../shaders/matmul_f16.wgsl?raw';
import regblockSrc from '../../../shaders/matmul_regblock.wgsl?raw';
import wPackedSrc from '../../../shaders/matmul_w_f16.wgsl?raw';
import wNativeSrc from '../../../shaders/matmul_w_f16_native.wgsl?raw';
import embedCommonSrc from '../../../shaders/embed_common.wgsl?raw';
import embedPackedSrc from '../../../shaders/embed_f16.wgsl?raw';
import embedNativeSrc from '../../../shaders/embed_f16_native.wgsl?raw';
import type { GpuContext } from '../core/device.js';
import { wgsl } from '../core/layout.js';

export type F16Kernels = 'native' | 'packed';

/** The variant for a device whose enabled features are `features` (a GPUDevice's `features`, or any set of names). */
export function f16KernelsFor(features: { has(name: string): boolean }): F16Kernels {
  return features.has('shader-f16') ? 'native' : 'packed';
}

/** The f16 kernels this context runs: native where the device has shader-f16, else packed. */
export function f16KernelsOf(ctx: GpuContext): F16Kernels {
  return f16KernelsFor(ctx.device.features);
}

/** The f16 matmul module (entry points gemv_f16, gemm_regblock); `vec4X` when x's rows start on vec4s. */
export function f16MatmulWgsl(kind: F16Kernels, vec4X: boolean): string {
  return wgsl(kind === 'native' ? wNativeSrc : wPackedSrc, commonSrc, matmulCommonSrc, vec4X ? xVec4Src : xF32Src, f16Src, regblockSrc);
}

/** The f16 embedding kernel, to compose after common.wgsl and embed_common.wgsl (embed.ts does). */
export function f16EmbedSource(kind: F16Kernels): string {
  return kind === 'native' ? embedNativeSrc : embedPackedSrc;
}

/** The whole f16 embedding module (entry point embed_f16), as createEmbedding composes it. */
export function f16EmbedWgsl(kind: F16Kernels): string {
  return wgsl(commonSrc, embedCommonSrc, f16EmbedSource(kind));
}
