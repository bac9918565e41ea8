/**
 * Which checkpoint format a file is, from its first bytes: llama2.c version 2 (runq.c, Q8_0)
 * starts with the magic "ak42"; anything else is read as the legacy version 0 header.
 */
import type { Llama2cLayout } from './llama2c.js';
import { LLAMA2C_MAGIC, parseLlama2cHeader } from './llama2c.js';
import { LLAMA2C_V2_HEADER_BYTES, parseLlama2cV2Header } from './llama2c-v2.js';

/** Bytes `parseModelHeader` needs from the start of the file (or the whole file, if shorter). */
export const MODEL_HEADER_BYTES = LLAMA2C_V2_HEADER_BYTES;

export interface ModelLayout extends Llama2cLayout {
  format: 'llama2c' | 'llama2c-v2';
  /** Quantisation group size of a quantised format. */
  groupSize?: number;
}

export function parseModelHeader(head: Uint8Array, fileSize: number): ModelLayout {
  const magic = head.byteLength >= 4 ? new DataView(head.buffer, head.byteOffset, 4).getUint32(0, true) : 0;
  if (magic === LLAMA2C_MAGIC) return { format: 'llama2c-v2', ...parseLlama2cV2Header(head, fileSize) };
  return { format: 'llama2c', ...parseLlama2cHeader(head, fileSize) };
}
