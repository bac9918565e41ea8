/**
 * The GPU layer of one rank: device acquisition, buffers, one wrapper per kernel, readback.
 *
 * Build everything once, then per step: `step.write(m, positions, slots)`, encode each op with
 * `op.encode(pass, m)` in one compute pass, `readback.encodeCopy` in the same command buffer,
 * submit, `await readback.read(ticket)`.
 */
export { createGpuContext, destroyGpuContext, defaultChoices } from './device.js';
export type { GpuContext, GpuContextOptions, GpuLimits, GpuFeatures, GpuAdapterInfo, KernelChoices, GemmKind, GemvKind } from './device.js';
export {
  createStorageBuffer, destroyStorageBuffer, createMatrix, writeMatrixRows, destroyMatrix, createStepParams, destroyStepParams,
} from './buffers.js';
export type { Matrix, MatrixChunk, StepParams } from './buffers.js';
export { grid2d, paddedStride, planMatrixChunks } from './layout.js';
export type { BoundOp, Binding } from './op.js';
export { createMatmul, availableGemm, availableGemv } from './matmul.js';
export type { MatmulOptions, MatmulInput } from './matmul.js';
export { createRmsnorm } from './norm.js';
export type { RmsnormOptions } from './norm.js';
export { createSiluMul, createAdd, createEmbed, createArgmax } from './elementwise.js';
export type { Operand, EmbedOptions, ArgmaxOptions } from './elementwise.js';
export { createKvCache, destroyKvCache, createKvWrite, kvIndex } from './kv-cache.js';
export type { KvCache, KvCacheShape, KvWriteOptions } from './kv-cache.js';
export { createRopeTables, destroyRopeTables, createRope, createRopeKv } from './rope.js';
export type { RopeTables, RopeStyle, RopeOptions, RopeKvOptions } from './rope.js';
export { createAttention } from './attention.js';
export type { AttentionOptions } from './attention.js';
export { createReadback, destroyReadback, createSleeper } from './readback.js';
export type { Readback, ReadTicket, ReadOptions, ReadbackOptions, ReadbackStats, Sleeper } from './readback.js';
export { acquireBuffer, releaseBuffer } from './pool.js';
export type { BufferPool } from './pool.js';
export type { PipelineCache } from './pipelines.js';
