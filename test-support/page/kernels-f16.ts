/**
 * Page-side tests of the f16 weight kernels, exposed as `window.tp.f16.*`: the GPU against the
 * f32 oracle (reference.ts) on the f16-rounded weights, on random inputs. Every half is exactly
 * an f32, so the tolerance is the f32 matmul's. Returns `worst` as in kernels.ts (≤ 1 passes),
 * and which variant ran (`packed` on an adapter without shader-f16).
 */
import * as ref from '../../src/model/reference.js';
import { dequantize, quantize } from '../../src/model/formats/gguf-blocks.js';
import { createHalfMatrix, destroyHalfMatrix, writeHalfRows } from '../../src/gpu/core/half-matrix.js';
import { f16KernelsOf, type F16Kernels } from '../../src/gpu/kernels/f16-shaders.js';
import { createEmbedding } from '../../src/gpu/kernels/embed.js';
import { addBiasAccumulate, compare, effectiveInput, matmulCaseData, runEmbedCase, runMatmulCase, withCtx, type Check, type WeightMatmulCase } from './kernels.js';
import { randn, rng } from '../../src/cli/page/gpu.js';

export type F16MatmulCase = WeightMatmulCase;

export interface F16Check extends Check {
  chunks: number;
  kernels: F16Kernels;
  shaderF16: boolean;
}

/** x as f16 bits and the f32 values they hold. */
function halves(x: Float32Array): { h: Uint16Array; f: Float32Array } {
  const bytes = quantize('F16', x);
  const f = new Float32Array(x.length);
  dequantize('F16', bytes, f);
  return { h: new Uint16Array(bytes.buffer), f };
}

export async function testF16Matmul(c: F16MatmulCase): Promise<F16Check> {
  return withCtx(c.bindingLimit, async (ctx) => {
    const { m, k, n } = c;
    const rand = rng(c.seed ?? 3);
    const d = matmulCaseData(rand, m, k, n, c.input ?? 'plain', () => halves(randn(n * k, rand, 0.3)));
    const xin = effectiveInput(d, m, k);
    const want = new Float32Array(m * n);
    const mag = new Float32Array(m * n);
    ref.matmul(want, xin, d.w.f, m, k, n);
    ref.matmul(mag, xin.map(Math.abs), d.w.f.map(Math.abs), m, k, n);
    addBiasAccumulate(d, want, mag, n, c);

    const wm = createHalfMatrix(ctx, n, k, 'wf16');
    writeHalfRows(ctx, wm, 0, d.w.h);
    const chunks = wm.chunks.length;
    const got = await runMatmulCase(ctx, d, m, k, n, wm, c).finally(() => destroyHalfMatrix(wm));
    return { ...compare(got, want, mag), chunks, kernels: f16KernelsOf(ctx), shaderF16: ctx.features.shaderF16 };
  });
}

/** Embedding rows of an f16 table: exactly the halves' values. */
export async function testF16Embed(c: { vocab: number; dim: number; tokens: number[]; bindingLimit?: number; seed?: number }): Promise<F16Check> {
  return withCtx(c.bindingLimit, async (ctx) => {
    const rand = rng(c.seed ?? 5);
    const m = c.tokens.length;
    const t = halves(randn(c.vocab * c.dim, rand));
    const want = new Float32Array(m * c.dim);
    ref.embed(want, t.f, c.tokens, c.dim);
    const table = createHalfMatrix(ctx, c.vocab, c.dim, 'embedding');
    writeHalfRows(ctx, table, 0, t.h);
    const chunks = table.chunks.length;
    const got = await runEmbedCase(ctx, c.tokens, c.dim, (step, tokens, y) => createEmbedding(ctx, step, { table, tokens, y, maxM: m }))
      .finally(() => destroyHalfMatrix(table));
    return { ...compare(got, want, 0, 0, 0), chunks, kernels: f16KernelsOf(ctx), shaderF16: ctx.features.shaderF16 };
  });
}
