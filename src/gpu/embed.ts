/**
 * The embedding lookup of every table kind (f32, Q8_0, Q4_0): one op that dispatches once per
 * chunk of the table (a table larger than a binding is split by rows), each dispatch writing
 * the output rows whose tokens fall in its chunk. The kernels share embed_common.wgsl and differ
 * only in how they read a value of a row.
 */
import commonSrc from '../../shaders/common.wgsl?raw';
import embedCommonSrc from '../../shaders/embed_common.wgsl?raw';
import type { GpuContext } from './device.js';
import { createParamBlock, type StepParams } from './buffers.js';
import { wgsl } from './layout.js';
import { bindGroup, dispatchLinear, makeOp, type BoundOp } from './op.js';

const WG = 64;

/** Where the tokens come from and the output goes: the options every embedding takes. */
export interface EmbedIo {
  /** u32 token ids; row r's id at tokens[tokenOffset + r·tokenStride]. */
  tokens: GPUBuffer;
  /** 1 for a plain id list; 2 reads argmax's (index, value) output directly. */
  tokenStride?: number;
  tokenOffset?: number;
  /** y (maxM, yStride) f32. */
  y: GPUBuffer;
  yStride?: number;
  maxM: number;
}

/** One chunk of a table: its rows [rowStart, rowStart + rows), the values' buffer and, quantised, the scales'. */
export interface EmbedChunk {
  rowStart: number;
  rows: number;
  values: GPUBuffer;
  scales?: GPUBuffer;
}

/** The kernel: its entry point, the WGSL it needs beyond common.wgsl and embed_common.wgsl, and the table's geometry. */
export interface EmbedKernel {
  entry: string;
  sources: string[];
  dim: number;
  /** u32/f32 words per table row. */
  rowWords: number;
  /** Values per scale (quantised tables). */
  groupSize?: number;
}

export function createTableEmbed(ctx: GpuContext, step: StepParams, o: EmbedIo, k: EmbedKernel, chunks: readonly EmbedChunk[]): BoundOp {
  const pipeline = ctx.pipelines.get(wgsl(commonSrc, embedCommonSrc, ...k.sources), k.entry, {}, k.entry);
  const params: GPUBuffer[] = [];
  const bgs = chunks.map((c) => {
    const p = createParamBlock(ctx, [k.dim, k.rowWords, c.rowStart, c.rows, o.tokenStride ?? 1, o.tokenOffset ?? 0, o.yStride ?? k.dim, k.groupSize ?? 0], [], k.entry);
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
