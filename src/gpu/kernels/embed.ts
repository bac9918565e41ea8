/**
 * The embedding lookup, for every table dtype (f32, f16, Q8_0, Q4_0, q8_m): one op that dispatches
 * once per chunk of the table (a table larger than a binding is split by rows), each dispatch
 * writing the output rows whose tokens fall in its chunk. The kernels share embed_common.wgsl
 * and differ only in how they read a value of a row; each writes it exactly (f16 widened,
 * quantised values times their scale, as the oracle dequantises).
 */
import commonSrc from '../../../shaders/common.wgsl?raw';
import embedCommonSrc from '../../../shaders/embed_common.wgsl?raw';
import embedF32Src from '../../../shaders/embed.wgsl?raw';
import embedQ8Src from '../../../shaders/embed_q8.wgsl?raw';
import embedQ4Src from '../../../shaders/embed_q4.wgsl?raw';
import embedQ8mSrc from '../../../shaders/embed_q8m.wgsl?raw';
import unpackQ8Src from '../../../shaders/q8_unpack.wgsl?raw';
import type { GpuContext } from '../core/device.js';
import { createParamBlock, type Matrix, type StepParams } from '../core/buffers.js';
import { isHalfMatrix, type HalfMatrix } from '../core/half-matrix.js';
import { isQuantMatrix, type QuantMatrix } from '../core/quant-matrix.js';
import { wgsl } from '../core/layout.js';
import { bindGroup, dispatchLinear, makeOp, type BoundOp } from '../core/op.js';
import { f16EmbedSource, f16KernelsOf } from './f16-shaders.js';

const WG = 64;

export interface EmbeddingOptions {
  /** The table (vocab, dim), possibly split across bindings; its dtype picks the kernel. */
  table: Matrix | HalfMatrix | QuantMatrix;
  /** u32 token ids, one per row. */
  tokens: GPUBuffer;
  /** y (maxM, yStride) f32. */
  y: GPUBuffer;
  yStride?: number;
  maxM: number;
}

/** One chunk of a table: its rows [rowStart, rowStart + rows), the values' buffer and, quantised, the scales'. */
interface TableChunk {
  rowStart: number;
  rows: number;
  values: GPUBuffer;
  scales?: GPUBuffer;
}

/** The kernel for a table: its entry point, the WGSL it needs beyond common.wgsl and embed_common.wgsl, and the table's geometry. */
interface TableKernel {
  entry: string;
  sources: string[];
  dim: number;
  /** u32/f32 words per table row. */
  rowWords: number;
  /** Values per scale (quantised tables). */
  groupSize?: number;
  chunks: TableChunk[];
}

function kernelFor(ctx: GpuContext, t: Matrix | HalfMatrix | QuantMatrix): TableKernel {
  if (isHalfMatrix(t)) {
    const chunks = t.chunks.map((c) => ({ rowStart: c.rowStart, rows: c.rows, values: c.buffer }));
    return { entry: 'embed_f16', sources: [f16EmbedSource(f16KernelsOf(ctx))], dim: t.k, rowWords: t.stride / 2, chunks };
  }
  if (isQuantMatrix(t)) {
    const chunks = t.chunks.map((c) => ({ rowStart: c.rowStart, rows: c.rows, values: c.q, scales: c.s }));
    if (t.kind === 'q4_0') return { entry: 'embed_q4', sources: [embedQ4Src], dim: t.k, rowWords: t.k / 8, groupSize: 32, chunks };
    if (t.kind === 'q8_m') return { entry: 'embed_q8m', sources: [embedQ8mSrc], dim: t.k, rowWords: t.k / 4, groupSize: t.groupSize, chunks };
    return { entry: 'embed_q8', sources: [unpackQ8Src, embedQ8Src], dim: t.k, rowWords: t.k / 4, groupSize: t.groupSize, chunks };
  }
  const chunks = t.chunks.map((c) => ({ rowStart: c.rowStart, rows: c.rows, values: c.buffer }));
  return { entry: 'embed', sources: [embedF32Src], dim: t.k, rowWords: t.stride, chunks };
}

/** y[r] = row tokens[r] of the table, as f32. */
export function createEmbedding(ctx: GpuContext, step: StepParams, o: EmbeddingOptions): BoundOp {
  const k = kernelFor(ctx, o.table);
  const pipeline = ctx.pipelines.get(wgsl(commonSrc, embedCommonSrc, ...k.sources), k.entry, {}, k.entry);
  const params: GPUBuffer[] = [];
  const bgs = k.chunks.map((c) => {
    // The kernels read row r's token at a stride and offset: a plain id list is stride 1 from 0.
    const p = createParamBlock(ctx, [k.dim, k.rowWords, c.rowStart, c.rows, 1, 0, o.yStride ?? k.dim, k.groupSize ?? 0], [], k.entry);
    params.push(p);
    return bindGroup(ctx, pipeline, [step.buffer, p, o.tokens, c.values, o.y, c.scales], k.entry);
  });
  return makeOp(ctx, k.entry, o.maxM, params, (pass, m) => {
    pass.setPipeline(pipeline);
    for (const bg of bgs) {
      pass.setBindGroup(0, bg);
      dispatchLinear(pass, Math.ceil((m * k.dim) / WG));
    }
  });
}
