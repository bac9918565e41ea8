import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { llama2cV2FileSize, loadLlama2cV2 } from './formats/llama2c-v2.js';
import { exportGroupSize, writeSynthCheckpointQ8 } from './synth-q8.js';
import { llama2cConfig, synthTensorFiller } from './synth.js';

const dir = mkdtempSync(join(tmpdir(), 'synth-q8-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('synthetic Q8_0 (llama2.c v2) checkpoints', () => {
  it('export.py\'s group size: 64 halved until it divides dim', () => {
    expect(exportGroupSize(llama2cConfig({ dim: 288, hiddenDim: 768, nLayers: 1, nHeads: 6, nKvHeads: 6, vocabSize: 8, seqLen: 4 }))).toBe(32);
    expect(exportGroupSize(llama2cConfig({ dim: 768, hiddenDim: 2048, nLayers: 1, nHeads: 12, nKvHeads: 12, vocabSize: 8, seqLen: 4 }))).toBe(64);
  });

  it('is a valid v2 file whose dequantised weights are the f32 synth weights within half a step', async () => {
    const c = llama2cConfig({ dim: 64, hiddenDim: 96, nLayers: 2, nHeads: 4, nKvHeads: 2, vocabSize: 40, seqLen: 8 });
    const path = join(dir, 'm.bin');
    await writeSynthCheckpointQ8(c, 7, path, 16);
    expect(statSync(path).size).toBe(llama2cV2FileSize(c, 16));
    const m = loadLlama2cV2(readArrayBuffer(path));
    expect(m.groupSize).toBe(16);
    const w = new Float32Array(96 * 64);
    synthTensorFiller('layers.1.feed_forward.w3', 64, 7)(w);
    const t = m.weights.w3[1]!;
    for (let i = 0; i < w.length; i++) {
      const s = t.s[Math.floor(i / 16)]!;
      expect(Math.abs(t.q[i]! * s - w[i]!)).toBeLessThanOrEqual(s / 2 + 1e-7);
    }
    expect(Array.from(m.weights.rmsFinalWeight)).toEqual(new Array(64).fill(1));
  });
});
