/**
 * Splits that do not divide evenly: a small synthetic model whose vocabulary (511) and MLP width
 * (100) split 171/170/170 and 34/33/33 over 3 ranks, with 6 heads over 3 KV heads. The engine
 * at TP=3 must give the oracle's greedy tokens, alone and with requests batched together.
 */
import { test, expect } from './fixtures.js';
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { llama2cConfig, writeSynthCheckpoint, writeSynthTokenizer } from '../src/model/synth.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { argmax, generate as oracle } from '../src/model/reference.js';
import { runGenerate } from '../src/cli/generate.js';

test('TP=3 with uneven vocabulary and MLP splits gives the oracle\'s tokens, alone and batched', async ({ harness }) => {
  const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-uneven-'));
  const config = llama2cConfig({ dim: 48, hiddenDim: 100, nLayers: 2, nHeads: 6, nKvHeads: 3, vocabSize: 511, seqLen: 64 });
  await writeSynthCheckpoint(config, 7, join(dir, 'm.bin'));
  await writeSynthTokenizer(511, 7, join(dir, 't.bin'));
  const bytes = readFileSync(join(dir, 'm.bin'));
  const m = loadLlama2c(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  const want = oracle(m, [1], 21, (l) => argmax(l, 511)).slice(1);

  const model = harness.server.mountFile('/files/uneven/m.bin', join(dir, 'm.bin'));
  const tokenizer = harness.server.mountFile('/files/uneven/t.bin', join(dir, 't.bin'));
  const base = { model, tokenizer, tp: 3, prompt: '', maxTokens: want.length, temperature: 0, topP: 0.9, seed: 1, ignoreEos: true };
  const alone = await runGenerate(harness, base);
  expect(alone.tokens).toEqual(want);
  const together = await harness.page.evaluate(
    ([o, r]) => window.tp.engine.generateConcurrent(o, [...r]),
    [base, [{ prompt: '', maxTokens: want.length }, { prompt: '', maxTokens: 8 }, { prompt: '', maxTokens: 13 }]] as const,
  );
  expect('error' in together ? together.error : null).toBeNull();
  expect(together).toEqual([want, want.slice(0, 8), want.slice(0, 13)]);
});
