/**
 * Which checkpoint format a file is, from its first bytes: GGUF starts with the magic "GGUF"
 * (its header is variable-length and read by formats/gguf.ts), llama2.c version 2 (runq.c, Q8_0)
 * with "ak42"; anything else is read as the legacy version 0 header.
 */
import { ModelFormatError } from '../../errors.js';
import type { Llama2cLayout } from './llama2c.js';
import { LLAMA2C_MAGIC, parseLlama2cHeader } from './llama2c.js';
import { LLAMA2C_V2_HEADER_BYTES, parseLlama2cV2Header } from './llama2c-v2.js';
import { isGguf } from './gguf.js';

/** Bytes `parseModelHeader` needs from the start of the file (or the whole file, if shorter). */
export const MODEL_HEADER_BYTES = LLAMA2C_V2_HEADER_BYTES;

export type ModelFormat = 'llama2c' | 'llama2c-v2' | 'gguf';

export interface ModelLayout extends Llama2cLayout {
  format: 'llama2c' | 'llama2c-v2';
  /** Quantisation group size of a quantised format. */
  groupSize?: number;
}

export function detectFormat(head: Uint8Array): ModelFormat {
  if (isGguf(head)) return 'gguf';
  const magic = head.byteLength >= 4 ? new DataView(head.buffer, head.byteOffset, 4).getUint32(0, true) : 0;
  return magic === LLAMA2C_MAGIC ? 'llama2c-v2' : 'llama2c';
}

/** The layout of a llama2.c file (either version) from its header. */
export function parseModelHeader(head: Uint8Array, fileSize: number): ModelLayout {
  const format = detectFormat(head);
  if (format === 'gguf') throw new ModelFormatError('this is a GGUF file, whose header is not fixed-size', 'Read it with readGguf (formats/gguf.ts), or pass it to createEngine');
  if (format === 'llama2c-v2') return { format, ...parseLlama2cV2Header(head, fileSize) };
  return { format, ...parseLlama2cHeader(head, fileSize) };
}
