/**
 * `webgpu-tp synth --shape stories260K|stories15M|stories42M|stories110M [--seed S] --out DIR`: writes a
 * seeded random-weight checkpoint of a real shape and a matching vocab-32000 tokenizer.
 * `--quant q8_0` also writes its llama2.c version 2 (runq.c Q8_0) form, `<shape>-synth-q8_0.bin`.
 * `--format gguf --quant f32,f16,q8_0,q4_0,q4_k_m,q5_k_m,q6_k` writes the same weights as Llama
 * GGUF files instead, one per quant, `<shape>-synth-<quant>.gguf`, each carrying the tokenizer;
 * the K-quant ones are llama-quantize's mixes by ggml's reference quantisation (gguf-mix.ts).
 */
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError } from '../errors.js';
import { llama2cConfig, SYNTH_SHAPES, type SynthShape, writeSynthCheckpoint, writeSynthTokenizer } from '../model/synth.js';
import { writeSynthCheckpointQ8 } from '../model/synth-q8.js';
import { writeSynthGguf } from '../model/synth-gguf.js';
import { GGUF_QUANTS, type GgufQuant } from '../model/formats/gguf-write.js';

export interface SynthOptions {
  shape: SynthShape;
  seed: number;
  out: string;
  quant?: readonly string[];
  /** `llama2c` (default): the .bin and tokenizer (and a v2 Q8_0 .bin); `gguf`: one GGUF per quant. */
  format?: string;
}

export interface SynthWritten {
  model?: string;
  tokenizer?: string;
  q8_0?: string;
  /** GGUF file per quant. */
  gguf?: Partial<Record<GgufQuant, string>>;
}

/**
 * Writes through `path.part`, renamed when complete: a run stopped midway (Ctrl-C) leaves no
 * truncated file that a later run (bench all reuses what exists) would take for a model.
 */
async function atomically(path: string, write: (path: string) => Promise<void>): Promise<void> {
  const part = `${path}.part`;
  try {
    await write(part);
  } catch (e) {
    await rm(part, { force: true });
    throw e;
  }
  await rename(part, path);
}

export async function synthCommand(opts: SynthOptions): Promise<SynthWritten> {
  const shapes = Object.keys(SYNTH_SHAPES);
  if (!Object.hasOwn(SYNTH_SHAPES, opts.shape)) {
    throw new InvalidArgumentError(`--shape must be one of ${shapes.join(', ')} (got ${opts.shape})`);
  }
  if (!Number.isSafeInteger(opts.seed)) throw new InvalidArgumentError(`--seed must be an integer (got ${opts.seed})`, 'For example --seed 42');
  if (!opts.out) throw new InvalidArgumentError('--out is required', 'Pass the directory to write into, e.g. --out models/');
  const format = opts.format ?? 'llama2c';
  if (format !== 'llama2c' && format !== 'gguf') throw new InvalidArgumentError(`--format must be llama2c or gguf (got ${format})`);
  const config = llama2cConfig(SYNTH_SHAPES[opts.shape]);
  if (format === 'gguf') {
    const quants = opts.quant?.length ? opts.quant : ['f32'];
    const bad = quants.filter((q) => !(GGUF_QUANTS as readonly string[]).includes(q));
    if (bad.length) throw new InvalidArgumentError(`--format gguf --quant takes ${GGUF_QUANTS.join(', ')} (got ${bad.join(', ')})`);
    await mkdir(opts.out, { recursive: true });
    const gguf: Partial<Record<GgufQuant, string>> = {};
    for (const q of quants as GgufQuant[]) {
      gguf[q] = join(opts.out, `${opts.shape}-synth-${q}.gguf`);
      await atomically(gguf[q]!, (p) => writeSynthGguf(config, opts.seed, q, p, `${opts.shape}-synth`));
    }
    return { gguf };
  }
  const bad = (opts.quant ?? []).filter((q) => q !== 'q8_0');
  if (bad.length) throw new InvalidArgumentError(`--quant supports q8_0 for llama2.c files (got ${bad.join(', ')}); --format gguf takes ${GGUF_QUANTS.join(', ')}`);
  await mkdir(opts.out, { recursive: true });
  const model = join(opts.out, `${opts.shape}-synth.bin`);
  const tokenizer = join(opts.out, `tok${config.vocabSize}-synth.bin`);
  await atomically(model, (p) => writeSynthCheckpoint(config, opts.seed, p));
  await atomically(tokenizer, (p) => writeSynthTokenizer(config.vocabSize, opts.seed, p));
  if (!opts.quant?.includes('q8_0')) return { model, tokenizer };
  const q8 = join(opts.out, `${opts.shape}-synth-q8_0.bin`);
  await atomically(q8, (p) => writeSynthCheckpointQ8(config, opts.seed, p));
  return { model, tokenizer, q8_0: q8 };
}
