import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { parseLlama2cHeader } from '../model/formats/llama2c.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import { synthCommand } from './synth.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-synth-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('synthCommand', () => {
  it('writes stories15M and its tokenizer', async () => {
    const { model, tokenizer } = await synthCommand({ shape: 'stories15M', seed: 1, out: join(dir, 'models') });
    const head = readFileSync(model).subarray(0, 28);
    const { config } = parseLlama2cHeader(head, statSync(model).size);
    expect(config).toMatchObject({ dim: 288, hiddenDim: 768, nLayers: 6, nHeads: 6, nKvHeads: 6, vocabSize: 32000, seqLen: 256 });
    expect(Tokenizer.parse(readFileSync(tokenizer), 32000).vocabSize).toBe(32000);
  });

  it('rejects unknown shapes and bad seeds', async () => {
    await expect(synthCommand({ shape: 'stories1B' as 'stories15M', seed: 1, out: dir })).rejects.toThrow(InvalidArgumentError);
    await expect(synthCommand({ shape: 'stories15M', seed: 0.5, out: dir })).rejects.toThrow(/--seed must be an integer/);
  });
});
