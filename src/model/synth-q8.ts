/**
 * Synthetic llama2.c version 2 (Q8_0) checkpoints: the f32 synth model's weights (the same
 * seeded streams, synth.ts) quantised by export.py's `version2_export` rules — group size 64
 * halved until it divides dim, per group scale = max|w| / 127, q = round-half-to-even(w / scale)
 * as torch.round does. Node only; streamed a chunk at a time.
 */
import { type FileHandle, open } from 'node:fs/promises';
import { InvalidArgumentError } from '../errors.js';
import type { ModelConfig } from './config.js';
import { encodeLlama2cV2Header, llama2cV2TensorTable } from './formats/llama2c-v2.js';
import { synthTensorFiller } from './synth.js';

/** export.py's group size: 64, halved until it divides dim. */
export function exportGroupSize(c: ModelConfig): number {
  let g = 64;
  while (c.dim % g !== 0) g /= 2;
  return g;
}

function roundHalfEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Quantises w in place into (q, s) with export.py's rounding. */
export function quantizeExport(w: Float32Array, gs: number, q: Int8Array, s: Float32Array): void {
  for (let g = 0; g < w.length / gs; g++) {
    let wmax = 0;
    for (let i = g * gs; i < (g + 1) * gs; i++) wmax = Math.max(wmax, Math.abs(w[i]!));
    const scale = Math.fround(wmax / 127);
    s[g] = scale;
    for (let i = g * gs; i < (g + 1) * gs; i++) q[i] = scale === 0 ? 0 : roundHalfEven(Math.fround(w[i]! / scale));
  }
}

async function writeAll(fh: FileHandle, bytes: Uint8Array): Promise<void> {
  for (let off = 0; off < bytes.length;) {
    const { bytesWritten } = await fh.write(bytes, off, bytes.length - off);
    off += bytesWritten;
  }
}

const CHUNK = 1 << 20;

/** Writes the Q8_0 (llama2.c v2) form of `writeSynthCheckpoint(config, seed)` to `path`. */
export async function writeSynthCheckpointQ8(config: ModelConfig, seed: number, path: string, groupSize = exportGroupSize(config)): Promise<void> {
  if (groupSize % 4 !== 0 || config.dim % groupSize !== 0 || config.hiddenDim % groupSize !== 0) {
    throw new InvalidArgumentError(`group size ${groupSize} must be a multiple of 4 dividing dim ${config.dim} and hidden_dim ${config.hiddenDim}`);
  }
  const fh = await open(path, 'w');
  try {
    await writeAll(fh, encodeLlama2cV2Header(config, groupSize));
    for (const t of llama2cV2TensorTable(config, groupSize)) {
      if (t.aliasOf) continue;
      const n = t.shape[0] * t.shape[1];
      const fill = synthTensorFiller(t.name, t.shape[1], seed);
      if (t.dtype === 'f32') {
        const v = new Float32Array(n);
        fill(v);
        await writeAll(fh, new Uint8Array(v.buffer));
        continue;
      }
      // values chunk by chunk (chunks are whole groups), scales after them
      const scales = new Float32Array(n / groupSize);
      const chunk = Math.floor(CHUNK / groupSize) * groupSize;
      const w = new Float32Array(Math.min(n, chunk));
      const q = new Int8Array(w.length);
      for (let done = 0; done < n; done += w.length) {
        const len = Math.min(w.length, n - done);
        fill(w.subarray(0, len));
        quantizeExport(w.subarray(0, len), groupSize, q, scales.subarray(done / groupSize));
        await writeAll(fh, new Uint8Array(q.buffer, 0, len));
      }
      await writeAll(fh, new Uint8Array(scales.buffer));
    }
  } finally {
    await fh.close();
  }
}
