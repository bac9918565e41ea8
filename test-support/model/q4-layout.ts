/**
 * A q4_0 layout of an f32 llama2.c checkpoint, for tests and measurements while no q4_0 file
 * format is read: chosen tensors stored as q4_0 the way the plan and the loader see them
 * (src/model/config.ts `TensorInfo`: the nibble plane, then f32 scales), the rest f32, and the
 * f32 oracle on the weights as stored (the q4_0 tensors dequantised).
 */
import type { TensorInfo } from '../../src/model/config.js';
import { loadLlama2c } from '../../src/model/formats/llama2c.js';
import type { ReferenceModel } from '../../src/model/reference.js';
import { dequantizeQ4, Q4_GROUP, quantizeQ4 } from '../../src/model/reference-q4.js';

export interface Q4Layout {
  /** The whole "file": every tensor's bytes at its TensorInfo offsets. */
  bytes: ArrayBuffer;
  tensors: TensorInfo[];
  /** The f32 oracle on the weights as the layout stores them (q4_0 tensors dequantised). */
  oracle: ReferenceModel;
  /** Names stored as q4_0. */
  quantised: string[];
}

/**
 * Lays out an f32 llama2.c checkpoint with the tensors `pick` chooses stored as q4_0 and the
 * rest f32, in file order. Vectors (norms) and a tensor whose rows do not split into groups of 32
 * stay f32, as in a GGUF file (Q4_0 cannot hold the latter). The classifier of a shared-embedding model stays an alias of the embedding.
 */
export function q4Layout(file: ArrayBuffer, tensors: readonly TensorInfo[], pick: (t: TensorInfo) => boolean): Q4Layout {
  const stored = tensors.filter((t) => !t.aliasOf);
  const out: TensorInfo[] = [];
  const quantised: string[] = [];
  const parts: { at: number; bytes: Uint8Array }[] = [];
  // A copy of the f32 file where each quantised tensor holds its dequantised values.
  const dequant = file.slice(0);
  let offset = 0;
  for (const t of stored) {
    const [rows, cols] = t.shape;
    const n = rows * cols;
    const src = new Float32Array(file, t.offset, n);
    if (t.dtype === 'f32' && rows > 1 && cols % Q4_GROUP === 0 && pick(t)) {
      const q = quantizeQ4(src);
      const scaleOffset = offset + Math.ceil(n / 2 / 4) * 4;
      out.push({ name: t.name, offset, shape: [rows, cols], dtype: 'q4_0', byteLength: n / 2, quant: { groupSize: Q4_GROUP, scaleOffset } });
      parts.push({ at: offset, bytes: q.q }, { at: scaleOffset, bytes: new Uint8Array(q.s.buffer) });
      dequantizeQ4(q, n, new Float32Array(dequant, t.offset, n));
      quantised.push(t.name);
      offset = scaleOffset + q.s.byteLength;
    } else {
      out.push({ name: t.name, offset, shape: [rows, cols], dtype: 'f32', byteLength: n * 4 });
      parts.push({ at: offset, bytes: new Uint8Array(file, t.offset, n * 4) });
      offset += n * 4;
    }
  }
  for (const t of tensors) {
    if (t.aliasOf) out.push({ ...out.find((s) => s.name === t.aliasOf)!, name: t.name, aliasOf: t.aliasOf });
  }
  const bytes = new Uint8Array(offset);
  for (const p of parts) bytes.set(p.bytes, p.at);
  const { config, weights } = loadLlama2c(dequant);
  return { bytes: bytes.buffer, tensors: out, oracle: { config, weights }, quantised };
}
