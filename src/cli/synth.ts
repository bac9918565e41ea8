/**
 * `webgpu-tp synth --shape stories15M|stories42M|stories110M [--seed S] --out DIR`: writes a
 * seeded random-weight checkpoint of a real shape and a matching vocab-32000 tokenizer.
 * `--quant q8_0` also writes its llama2.c version 2 (runq.c Q8_0) form, `<shape>-synth-q8_0.bin`.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError } from '../errors.js';
import { llama2cConfig, SYNTH_SHAPES, type SynthShape, writeSynthCheckpoint, writeSynthTokenizer } from '../model/synth.js';
import { writeSynthCheckpointQ8 } from '../model/synth-q8.js';

export async function synthCommand(
  opts: { shape: SynthShape; seed: number; out: string; quant?: readonly string[] },
): Promise<{ model: string; tokenizer: string; q8_0?: string }> {
  const shapes = Object.keys(SYNTH_SHAPES);
  if (!Object.hasOwn(SYNTH_SHAPES, opts.shape)) {
    throw new InvalidArgumentError(`--shape must be one of ${shapes.join(', ')} (got ${opts.shape})`);
  }
  if (!Number.isSafeInteger(opts.seed)) throw new InvalidArgumentError(`--seed must be an integer (got ${opts.seed})`, 'For example --seed 42');
  if (!opts.out) throw new InvalidArgumentError('--out is required', 'Pass the directory to write into, e.g. --out models/');
  const bad = (opts.quant ?? []).filter((q) => q !== 'q8_0');
  if (bad.length) throw new InvalidArgumentError(`--quant supports q8_0 (got ${bad.join(', ')})`);
  const config = llama2cConfig(SYNTH_SHAPES[opts.shape]);
  await mkdir(opts.out, { recursive: true });
  const model = join(opts.out, `${opts.shape}-synth.bin`);
  const tokenizer = join(opts.out, `tok${config.vocabSize}-synth.bin`);
  await writeSynthCheckpoint(config, opts.seed, model);
  await writeSynthTokenizer(config.vocabSize, opts.seed, tokenizer);
  if (!opts.quant?.includes('q8_0')) return { model, tokenizer };
  const q8 = join(opts.out, `${opts.shape}-synth-q8_0.bin`);
  await writeSynthCheckpointQ8(config, opts.seed, q8);
  return { model, tokenizer, q8_0: q8 };
}
