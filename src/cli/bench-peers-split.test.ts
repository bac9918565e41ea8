import { describe, expect, it } from 'vitest';
import { makePlan } from '../parallel/plan.js';
import { llama2cConfig, SYNTH_SHAPES } from '../model/synth.js';
import { llama2cTensorTable } from '../model/formats/llama2c.js';
import { encodeGguf } from '../model/formats/gguf-write.js';
import { readGguf } from '../model/formats/gguf.js';
import { openSource } from '../loader/source.js';
import { kquantModel } from '../../test-support/model/kquant-gguf.js';
import { wholeBlockSplit, writtenTensors } from './bench-peers-split.js';
import { plannedConfigs } from './bench-peers.js';

describe('bench peers\' TP split', () => {
  const c110 = llama2cConfig(SYNTH_SHAPES.stories110M);
  const c15 = llama2cConfig(SYNTH_SHAPES.stories15M);

  it('is even where that keeps wo\'s blocks whole, and gives the heads alone out in whole-block runs where it would not', () => {
    expect(wholeBlockSplit(c110, 'f32', 2)).toBeUndefined();
    expect(wholeBlockSplit(c110, 'q4_0', 2)).toBeUndefined();
    expect(wholeBlockSplit(c110, 'q4_k_m', 1)).toBeUndefined();
    // 12 heads of 64: runs of 4 heads per super-block of 256, 3 runs over 2 ranks
    expect(wholeBlockSplit(c110, 'q4_k_m', 2)).toEqual({ heads: [8, 4] });
    expect(wholeBlockSplit(c110, 'q4_k_m', 3)).toBeUndefined();
    expect(wholeBlockSplit(c110, 'q6_k', 2)).toEqual({ heads: [8, 4] });
    expect(wholeBlockSplit(c110, 'f16', 2)).toBeUndefined();
    // stories15M: 6 heads of 48 in Q4_0's groups of 32 (runs of 2 heads); its Q4_K_M wo falls back to Q5_0
    expect(wholeBlockSplit(c15, 'q4_0', 2)).toEqual({ heads: [4, 2] });
    expect(wholeBlockSplit(c15, 'q4_k_m', 2)).toEqual({ heads: [4, 2] });
    expect(wholeBlockSplit(c15, 'f32', 2)).toBeUndefined();
  });

  it('derives the units from the tensor table the reader makes of the written file', async () => {
    const model = kquantModel();
    for (const quant of ['q4_k_m', 'q4_0', 'f16'] as const) {
      const bytes = encodeGguf(model, quant);
      expect(writtenTensors(model.config, quant)).toEqual((await readGguf(openSource(bytes))).tensors);
    }
  });

  it('the planner takes it: every rank\'s heads start on a whole super-block of wo, the MLP and vocab even', () => {
    const tensors = llama2cTensorTable(c110).map((t) => (t.shape[0] > 1 && t.shape[1] > 1 ? { ...t, dtype: 'q8_m' as const, quant: { groupSize: 32, scaleOffset: 0, block: 256 } } : t));
    const plan = makePlan(c110, { tensorParallel: 2, axes: wholeBlockSplit(c110, 'q4_k_m', 2) }, tensors);
    expect(plan.ranks.map((r) => r.heads)).toEqual([[0, 8], [8, 12]]);
    expect(plan.ranks.map((r) => r.hidden[0] % 256)).toEqual([0, 0]);
    expect(plan.ranks.map((r) => r.hidden)).toEqual([[0, 1024], [1024, 2048]]);
    expect(plan.ranks.map((r) => r.vocab)).toEqual([[0, 16000], [16000, 32000]]);
  });

  it('names the uneven rows by their heads per rank and passes the split to the engine', () => {
    const ours = plannedConfigs('q4_k_m', 64, c110).filter((p) => p.config.engine === 'webgpu-tp');
    // K-quant mixes: int8 activations on CPU ranks (as llama.cpp's Q8_K), f32 on GPU ranks (no int8 q8_m kernels there)
    expect(ours.map((p) => p.config.config)).toEqual(['gpu tp1', 'gpu tp2 heads 8:4', 'cpu tp1 int8', 'cpu tp2 heads 8:4 int8']);
    expect(ours.map((p) => p.spec({ gguf: 'm.gguf' }))[3]).toEqual({ engine: 'ours', model: 'm.gguf', tp: 2, devices: 'cpu', int8Activations: true, split: { heads: [8, 4] } });
    expect(ours.map((p) => p.spec({ gguf: 'm.gguf' }))[1]).toEqual({ engine: 'ours', model: 'm.gguf', tp: 2, devices: 'gpu', split: { heads: [8, 4] } });
    expect(plannedConfigs('q4_0', 64, c110).filter((p) => p.config.engine === 'webgpu-tp').map((p) => p.config.config)).toEqual(['gpu tp1 int8', 'gpu tp2 int8', 'cpu tp1 int8', 'cpu tp2 int8']);
  });
});
