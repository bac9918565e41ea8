import { describe, expect, it } from 'vitest';
import { cpuBlocker } from './device-measure.js';
import type { TensorInfo } from '../model/config.js';

const tensor = (name: string, dtype: TensorInfo['dtype']): TensorInfo => ({ name, offset: 0, shape: [4, 4], dtype, byteLength: 64 });
const q8File = [tensor('norm', 'f32'), tensor('layers.0.attention.wq', 'q8_0'), tensor('output', 'q8_0')];

describe('cpuBlocker', () => {
  it('lets CPU ranks run runq.c\'s exact W8A8 on Q8_0 weights (workers/cpu-exact.ts)', () => {
    expect(cpuBlocker(q8File, { activations: 'int8', runqExact: true })).toBeUndefined();
  });

  it('still blocks int8 activations without runqExact, and quantised weights with f32 activations', () => {
    expect(cpuBlocker(q8File, { activations: 'int8', runqExact: false })).toContain('int8 activations');
    expect(cpuBlocker(q8File, { activations: 'f32', runqExact: true })).toContain('quantised weights (q8_0)');
    expect(cpuBlocker([...q8File, tensor('layers.0.feed_forward.w2', 'q4_0')], { activations: 'int8', runqExact: true })).toContain('q4_0');
  });
});
