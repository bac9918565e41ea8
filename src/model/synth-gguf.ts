/**
 * Synthetic GGUF checkpoints: the synth model's weights (the same seeded streams as synth.ts)
 * and its tokenizer, as a Llama GGUF with matrices in F32, F16, Q8_0, Q4_0 or a K-quant mix (gguf-write.ts).
 * Node only; each tensor is generated, quantised and written a chunk of whole rows at a time.
 */
import { open } from 'node:fs/promises';
import type { ModelConfig } from './config.js';
import { quantizeAny } from './formats/gguf-kquants-write.js';
import { ggufName } from './formats/gguf.js';
import { ggufHeader, ggufMetadata, ggufTensorOut, ggufTensorPlan, type GgufQuant } from './formats/gguf-write.js';
import { synthTensorFiller, synthTokenizerBytes, writeAll } from './synth.js';
import { Tokenizer } from './tokenizer/tokenizer.js';

const CHUNK_FLOATS = 1 << 20;

/** Writes the `quant` GGUF form of `writeSynthCheckpoint(config, seed)` (with its tokenizer) to `path`. */
export async function writeSynthGguf(config: ModelConfig, seed: number, quant: GgufQuant, path: string, name = 'synth'): Promise<void> {
  const tok = Tokenizer.parse(synthTokenizerBytes(config.vocabSize, seed), config.vocabSize);
  const plan = ggufTensorPlan(config, quant);
  const infos = plan.map((t) => ggufTensorOut({ ...t, name: ggufName(t.name) }));
  const { header, offsets, fileSize } = ggufHeader(ggufMetadata(config, quant, tok, name), infos);
  const fh = await open(path, 'w');
  try {
    await writeAll(fh, header);
    let written = header.byteLength;
    for (const [i, t] of plan.entries()) {
      await writeAll(fh, new Uint8Array(offsets[i]! - written)); // alignment padding
      const [rows, cols] = t.shape;
      const fill = synthTensorFiller(t.name, cols, seed);
      const chunkRows = Math.max(1, Math.floor(CHUNK_FLOATS / cols));
      const buf = new Float32Array(Math.min(rows, chunkRows) * cols);
      for (let r = 0; r < rows; r += chunkRows) {
        const part = buf.subarray(0, Math.min(chunkRows, rows - r) * cols);
        fill(part);
        await writeAll(fh, quantizeAny(t.type, part));
      }
      written = offsets[i]! + infos[i]!.byteLength;
    }
    if (written !== fileSize) throw new Error(`synth GGUF layout drifted: wrote ${written} bytes, expected ${fileSize}`);
  } finally {
    await fh.close();
  }
}
