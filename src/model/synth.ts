/**
 * Synthetic llama2.c checkpoints and tokenizers: real shapes, seeded random weights. They let
 * benchmarks and memory tests run at stories15M/42M/110M size without downloading anything.
 * Node only (writes files); the checkpoint is streamed a chunk at a time.
 */
import { type FileHandle, open } from 'node:fs/promises';
import { InvalidArgumentError } from '../errors.js';
import type { ModelConfig } from './config.js';
import { encodeLlama2cHeader, llama2cFileSize, llama2cTensorTable } from './formats/llama2c.js';
import { ropeTables } from './reference.js';
import { mulberry32 } from './mulberry32.js';

/**
 * The shapes of Karpathy's TinyStories checkpoints (shared classifier). stories260K (vocab 512,
 * grouped-query attention) is for smoke runs of the benchmarks: seconds, not minutes.
 */
export const SYNTH_SHAPES = {
  stories260K: { dim: 64, hiddenDim: 172, nLayers: 5, nHeads: 8, nKvHeads: 4, vocabSize: 512, seqLen: 512 },
  stories15M: { dim: 288, hiddenDim: 768, nLayers: 6, nHeads: 6, nKvHeads: 6, vocabSize: 32000, seqLen: 256 },
  stories42M: { dim: 512, hiddenDim: 1376, nLayers: 8, nHeads: 8, nKvHeads: 8, vocabSize: 32000, seqLen: 1024 },
  stories110M: { dim: 768, hiddenDim: 2048, nLayers: 12, nHeads: 12, nKvHeads: 12, vocabSize: 32000, seqLen: 1024 },
} as const;

export type SynthShape = keyof typeof SYNTH_SHAPES;

/** A llama2.c ModelConfig for a shape (headSize = dim / nHeads, llama2.c's constants). */
export function llama2cConfig(shape: Omit<ModelConfig, 'headSize' | 'sharedClassifier' | 'normEps' | 'ropeTheta' | 'ropeStyle'> & { sharedClassifier?: boolean }): ModelConfig {
  return {
    ...shape, headSize: shape.dim / shape.nHeads, sharedClassifier: shape.sharedClassifier ?? true,
    normEps: 1e-5, ropeTheta: 10000, ropeStyle: 'interleaved',
  };
}

/** 32-bit FNV-1a of a name, to give each tensor its own stream (any tensor can be regenerated alone). */
function nameHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * The values of one synthetic tensor, as a filler that continues its stream on each call: norms
 * are 1, every other tensor is uniform in ±1/sqrt(fan_in) so activations stay near unit scale.
 */
export function synthTensorFiller(name: string, cols: number, seed: number): (out: Float32Array) => void {
  if (name.endsWith('norm')) return (out) => out.fill(1);
  const rand = mulberry32((seed ^ nameHash(name)) >>> 0);
  const a = 1 / Math.sqrt(cols);
  return (out) => {
    for (let i = 0; i < out.length; i++) out[i] = (2 * rand() - 1) * a;
  };
}

const CHUNK_FLOATS = 1 << 20; // 4 MB per write

/** FileHandle.write may write less than asked; keep going until all of it is out. */
export async function writeAll(fh: FileHandle, bytes: Uint8Array): Promise<void> {
  for (let off = 0; off < bytes.length;) {
    const { bytesWritten } = await fh.write(bytes, off, bytes.length - off);
    off += bytesWritten;
  }
}

/** Writes a seeded random-weight llama2.c (version 0) checkpoint of this shape to `path`. */
export async function writeSynthCheckpoint(config: ModelConfig, seed: number, path: string): Promise<void> {
  const fh = await open(path, 'w');
  try {
    await writeAll(fh, encodeLlama2cHeader(config));
    let written = 28;
    // run.c's unused freq_cis_real / freq_cis_imag sit between the final norm and an unshared
    // classifier (or end the file); fill them as export.py did
    const ropeGap = async (until: number): Promise<void> => {
      if (until === written) return;
      const { cos, sin } = ropeTables(config.headSize, config.seqLen, config.ropeTheta);
      await writeAll(fh, new Uint8Array(cos.buffer));
      await writeAll(fh, new Uint8Array(sin.buffer));
      written += cos.byteLength + sin.byteLength;
      if (written !== until) throw new Error(`synth layout drifted: at byte ${written}, expected ${until}`);
    };
    for (const t of llama2cTensorTable(config)) {
      if (t.aliasOf) continue;
      await ropeGap(t.offset);
      // one stream per tensor, consumed chunk by chunk, so nothing larger than a chunk is held
      const n = t.byteLength / 4;
      const fill = synthTensorFiller(t.name, t.shape[1], seed);
      const buf = new Float32Array(Math.min(n, CHUNK_FLOATS));
      for (let done = 0; done < n; done += buf.length) {
        const part = buf.subarray(0, Math.min(buf.length, n - done));
        fill(part);
        await writeAll(fh, new Uint8Array(part.buffer, 0, part.byteLength));
      }
      written += t.byteLength;
    }
    await ropeGap(llama2cFileSize(config));
  } finally {
    await fh.close();
  }
}

const enc = new TextEncoder();

/**
 * A valid llama2.c tokenizer.bin for `vocabSize` tokens: <unk>, <s>, </s>, the 256 byte
 * pieces, the 95 printable ASCII characters, then seeded BPE-style merges of existing pieces
 * (so encode can reach every piece), scored so earlier merges win.
 */
export function synthTokenizerBytes(vocabSize: number, seed: number): Uint8Array {
  const base = 3 + 256 + 95;
  if (!Number.isInteger(vocabSize) || vocabSize < base) {
    throw new InvalidArgumentError(`a synthetic tokenizer needs at least ${base} tokens, got ${vocabSize}`);
  }
  const pieces: string[] = ['<unk>', '\n<s>\n', '\n</s>\n'];
  const scores: number[] = [0, 0, 0];
  for (let b = 0; b < 256; b++) {
    pieces.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    scores.push(0);
  }
  const seen = new Set<string>();
  for (let c = 0x20; c < 0x7f; c++) {
    pieces.push(String.fromCharCode(c));
    scores.push(-1e6); // single characters never come from a merge
    seen.add(String.fromCharCode(c));
  }
  // letters roughly by English frequency, so short common-looking pieces come first
  const letters = 'eeeeeeeeeeeettttttttaaaaaaaaoooooooiiiiiiinnnnnnnsssssshhhhhhrrrrrrddddllllcccuuummmwwffggyyppbbvkjxqz';
  const rand = mulberry32(seed ^ 0x9e3779b9);
  const pick = (): string => letters[Math.floor(rand() * letters.length)]!;
  // grown pieces: ' ' or a letter, extended one letter at a time; longer ones are rarer
  const grown: string[] = [' ', ...new Set(letters)];
  while (pieces.length < vocabSize) {
    const left = grown[Math.floor(rand() * grown.length)]!;
    const piece = left + pick();
    if (piece.length > 16 || seen.has(piece) || rand() > 2 / piece.length) continue;
    seen.add(piece);
    grown.push(piece);
    pieces.push(piece);
    scores.push(-(pieces.length - base));
  }
  const bytes = pieces.map((p) => enc.encode(p));
  const maxLen = bytes.reduce((m, b) => Math.max(m, b.length), 0);
  const out = new Uint8Array(4 + bytes.reduce((n, b) => n + 8 + b.length, 0));
  const view = new DataView(out.buffer);
  view.setInt32(0, maxLen, true);
  let off = 4;
  bytes.forEach((b, i) => {
    view.setFloat32(off, scores[i]!, true);
    view.setInt32(off + 4, b.length, true);
    out.set(b, off + 8);
    off += 8 + b.length;
  });
  return out;
}

/** Writes `synthTokenizerBytes` to `path`. */
export async function writeSynthTokenizer(vocabSize: number, seed: number, path: string): Promise<void> {
  const fh = await open(path, 'w');
  try {
    await writeAll(fh, synthTokenizerBytes(vocabSize, seed));
  } finally {
    await fh.close();
  }
}
