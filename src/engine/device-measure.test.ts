import { describe, expect, it } from 'vitest';
import { cpuBlocker } from './device-measure.js';
import { llama2cTensorTable } from '../model/formats/llama2c.js';
import { llama2cConfig } from '../model/synth.js';
import type { TensorInfo } from '../model/config.js';

const c = llama2cConfig({ dim: 64, hiddenDim: 128, nLayers: 2, nHeads: 8, nKvHeads: 4, vocabSize: 96, seqLen: 64 });
const quantised = (dtype: 'q8_0' | 'q4_0', groupSize: number): TensorInfo[] =>
  llama2cTensorTable(c).map((t) => (t.shape[0] === 1 ? t : { ...t, dtype, quant: { groupSize, scaleOffset: 0 } }));

describe('what CPU ranks cannot run yet', () => {
  it('runs f32, and GGUF Q8_0 / Q4_0 weight-only or with int8 activations', () => {
    expect(cpuBlocker(llama2cTensorTable(c), { activations: 'f32', runqExact: false })).toBeUndefined();
    for (const dtype of ['q8_0', 'q4_0'] as const) {
      for (const activations of ['f32', 'int8'] as const) expect(cpuBlocker(quantised(dtype, 32), { activations, runqExact: false })).toBeUndefined();
    }
  });

  it('names llama2.c v2 groups other than 32, and runq.c\'s exact W8A8 beyond Q8_0 and f32 tensors', () => {
    expect(cpuBlocker(quantised('q8_0', 64), { activations: 'f32', runqExact: false })).toBe('quantised weights (q8_0 in groups of 64)');
    // runq.c's W8A8 on Q8_0 matrices and f32 norms runs on CPU ranks (workers/cpu-exact.ts), in any group size
    expect(cpuBlocker(quantised('q8_0', 4), { activations: 'int8', runqExact: true })).toBeUndefined();
    expect(cpuBlocker(quantised('q4_0', 32), { activations: 'int8', runqExact: true })).toBe("runq.c's exact W8A8");
    // runqExact means nothing with f32 activations.
    expect(cpuBlocker(quantised('q8_0', 32), { activations: 'f32', runqExact: true })).toBeUndefined();
  });
});
