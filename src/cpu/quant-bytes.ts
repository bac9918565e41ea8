/**
 * The sizes of quant.wat's int8 activation rows, apart from the kernels, so the main thread's
 * memory check (src/engine/cpu-memory.ts) counts them as a rank allocates them without loading
 * any WebAssembly.
 */

/** The only group size the kernels take (GGUF's). */
export const QUANT_GROUP = 32;

/**
 * Bytes of m input rows of k values quantised (`CpuQuantKernels.quantize`): k int8, then k/32 f32
 * scales and k/32 i32 sums, a row; then the rows' sign planes (2k bytes a row: per group of 32,
 * max(q, 0), then max(−q, 0)), which the relaxed build's Q8_0 kernel multiplies by.
 */
export function int8ActivationBytes(m: number, k: number): number {
  return m * (3 * k + (8 * k) / QUANT_GROUP);
}
