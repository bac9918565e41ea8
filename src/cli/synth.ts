/**
 * `webgpu-tp synth --shape stories15M|stories42M|stories110M [--seed S] --out DIR`: writes a
 * seeded random-weight checkpoint of a real shape and a matching vocab-32000 tokenizer.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError } from '../errors.js';
import { llama2cConfig, SYNTH_SHAPES, type SynthShape, writeSynthCheckpoint, writeSynthTokenizer } from '../model/synth.js';

export async function synthCommand(opts: { shape: SynthShape; seed: number; out: string }): Promise<{ model: string; tokenizer: string }> {
  const shapes = Object.keys(SYNTH_SHAPES);
  if (!Object.hasOwn(SYNTH_SHAPES, opts.shape)) {
    throw new InvalidArgumentError(`--shape must be one of ${shapes.join(', ')} (got ${opts.shape})`);
  }
  if (!Number.isSafeInteger(opts.seed)) throw new InvalidArgumentError(`--seed must be an integer (got ${opts.seed})`, 'For example --seed 42');
  if (!opts.out) throw new InvalidArgumentError('--out is required', 'Pass the directory to write into, e.g. --out models/');
  const config = llama2cConfig(SYNTH_SHAPES[opts.shape]);
  await mkdir(opts.out, { recursive: true });
  const model = join(opts.out, `${opts.shape}-synth.bin`);
  const tokenizer = join(opts.out, `tok${config.vocabSize}-synth.bin`);
  await writeSynthCheckpoint(config, opts.seed, model);
  await writeSynthTokenizer(config.vocabSize, opts.seed, tokenizer);
  return { model, tokenizer };
}
