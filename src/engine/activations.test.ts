import { describe, expect, it } from 'vitest';
import { resolveActivations } from './activations.js';
import { llama2cTensorTable } from '../model/formats/llama2c.js';
import { llama2cConfig } from '../model/synth.js';
import type { TensorInfo } from '../model/config.js';
import { InvalidArgumentError } from '../errors.js';

const c = llama2cConfig({ dim: 64, hiddenDim: 128, nLayers: 2, nHeads: 8, nKvHeads: 4, vocabSize: 96, seqLen: 64 });
const f32 = llama2cTensorTable(c);
// The matrices as `dtype` (norms stay f32); `mixWith` makes w2 that dtype instead, as a K-quant mix's.
const quantised = (dtype: TensorInfo['dtype'], mixWith?: TensorInfo['dtype']): TensorInfo[] =>
  f32.map((t) => (t.shape[0] === 1 ? t : { ...t, dtype: mixWith && t.name.endsWith('w2') ? mixWith : dtype, quant: { groupSize: 32, scaleOffset: 0 } }));
const CPU2 = [true, true];
const kind = (...a: Parameters<typeof resolveActivations>) => resolveActivations(...a).activations;

describe('which activations a placement runs', () => {
  it('a GGUF Q8_0 / Q4_0 on CPU ranks alone: int8, as llama.cpp\'s CPU path', () => {
    for (const dtype of ['q8_0', 'q4_0'] as const) {
      const r = resolveActivations({}, 'gguf', quantised(dtype), CPU2);
      expect(r.activations, dtype).toBe('int8');
      expect(r.reason).toMatch(/every rank is a CPU rank/);
      expect(kind({}, 'gguf', quantised(dtype), [true])).toBe('int8');
    }
  });

  it('with a GPU rank, mixed or alone: f32 (weight-only)', () => {
    for (const cpu of [[false], [false, false], [false, true], [true, false]]) {
      const r = resolveActivations({}, 'gguf', quantised('q4_0'), cpu);
      expect(r.activations, JSON.stringify(cpu)).toBe('f32');
      expect(r.reason).toMatch(/a GPU rank/);
    }
  });

  it('f32 and f16 files, and files with q8_m matrices beside Q8_0, keep f32 on CPU ranks', () => {
    expect(resolveActivations({}, 'gguf', f32, CPU2)).toEqual({ activations: 'f32', reason: 'no quantised matrix' });
    expect(kind({}, 'gguf', quantised('f16'), CPU2)).toBe('f32');
    expect(kind({}, 'hf', quantised('f16'), CPU2)).toBe('f32');
    expect(resolveActivations({}, 'gguf', quantised('q8_m'), CPU2).reason).toMatch(/q8_m matrices/);
    expect(kind({}, 'gguf', quantised('q8_0', 'q8_m'), CPU2)).toBe('f32');
    // Q8_0 beside f16 (a w2 llama-quantize could not group): still int8
    expect(kind({}, 'gguf', quantised('q8_0', 'f16'), CPU2)).toBe('int8');
  });

  it('an explicit option wins on any placement', () => {
    expect(resolveActivations({ int8Activations: false }, 'gguf', quantised('q4_0'), CPU2)).toEqual({ activations: 'f32', reason: 'int8Activations: false' });
    expect(resolveActivations({ weightOnly: true }, 'gguf', quantised('q4_0'), CPU2)).toEqual({ activations: 'f32', reason: 'weightOnly' });
    expect(resolveActivations({ int8Activations: true }, 'gguf', quantised('q4_0'), [false])).toEqual({ activations: 'int8', reason: 'int8Activations: true' });
    expect(kind({ int8Activations: true }, 'gguf', quantised('q8_m'), CPU2)).toBe('int8');
    expect(kind({ weightOnly: false, int8Activations: false }, 'gguf', quantised('q8_0'), CPU2)).toBe('f32');
  });

  it('llama2.c v2 files run W8A8 on any placement unless weightOnly (or int8Activations: false)', () => {
    const v2 = quantised('q8_0');
    for (const cpu of [[true], [false], [false, true]]) expect(kind({}, 'llama2c-v2', v2, cpu)).toBe('int8');
    expect(kind({ weightOnly: true }, 'llama2c-v2', v2, [true])).toBe('f32');
    expect(kind({ int8Activations: false }, 'llama2c-v2', v2, [false])).toBe('f32');
    expect(kind({}, 'llama2c', f32, [true])).toBe('f32');
  });

  it('weightOnly with int8Activations: true is an InvalidArgumentError', () => {
    expect(() => resolveActivations({ weightOnly: true, int8Activations: true }, 'gguf', quantised('q4_0'), CPU2)).toThrow(InvalidArgumentError);
  });
});
