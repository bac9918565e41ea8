import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { loadLlama2c } from './formats/llama2c.js';
import { encodeGguf } from './formats/gguf-write.js';
import { loadGgufDequantized } from './formats/gguf.js';
import { Tokenizer } from './tokenizer/tokenizer.js';
import { createRunState, forward, type ReferenceModel } from './reference.js';
import { forwardInt8, loadGgufInt8 } from './reference-int8.js';
import { randomWeights, TINY_QWEN2, TINY_QWEN3 } from '../../test-support/model/hf-testing.js';

const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);

/** Logits of the first few tokens of a story (BOS, then fixed tokens), int8 and weight-only. */
async function logits(quant: 'f32' | 'q4_0' | 'q8_0', model0: ReferenceModel = stories): Promise<{ int8: Float32Array[]; f32: Float32Array[]; kinds: string[] }> {
  const bytes = encodeGguf(model0, quant, tok);
  const m8 = await loadGgufInt8(bytes);
  const { model } = await loadGgufDequantized(bytes);
  const s8 = createRunState(m8.config);
  const s = createRunState(model.config);
  const out = { int8: [] as Float32Array[], f32: [] as Float32Array[], kinds: [...Object.values(m8.layers[0]!).map((w) => w.kind), m8.wcls.kind] };
  [1, 400, 261, 30].forEach((t, pos) => {
    out.int8.push(forwardInt8(m8, s8, t, pos).slice());
    out.f32.push(forward(model, s, t, pos).slice());
  });
  return out;
}

describe('the int8-activation oracle of GGUF models', () => {
  it('on an F32 file every matrix is f32 and the pass is reference.ts\'s, float for float', async () => {
    const r = await logits('f32');
    expect(new Set(r.kinds)).toEqual(new Set(['f32']));
    r.int8.forEach((l, i) => expect(l).toEqual(r.f32[i]));
  });

  it.each([['Qwen2 (q/k/v biases)', TINY_QWEN2], ['Qwen3 (q/k norms)', TINY_QWEN3]] as const)('on an F32 %s file the pass is reference.ts\'s, float for float', async (_, config) => {
    const r = await logits('f32', { config, weights: randomWeights(config, 3, 3) });
    r.int8.forEach((l, i) => expect(l).toEqual(r.f32[i]));
  });

  it.each(['q4_0', 'q8_0'] as const)('on a %s file its quantised matrices take int8 activations (w2, 172 columns, is F16): near weight-only, not equal', async (quant) => {
    const r = await logits(quant);
    // wq wk wv wo w1 w2 w3, then the shared classifier (the quantised embedding)
    expect(r.kinds).toEqual(['int8', 'int8', 'int8', 'int8', 'int8', 'f32', 'int8', 'int8']);
    for (const [i, l] of r.int8.entries()) {
      const f = r.f32[i]!;
      let err = 0;
      let mag = 0;
      for (let j = 0; j < l.length; j++) {
        err = Math.max(err, Math.abs(l[j]! - f[j]!));
        mag = Math.max(mag, Math.abs(f[j]!));
      }
      expect(err).toBeGreaterThan(0);
      expect(err).toBeLessThan(0.1 * mag);
    }
  });
});
