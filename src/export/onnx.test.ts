import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-web';
import onnxProto from 'onnx-proto';
import { loadLlama2c } from '../model/formats/llama2c.js';
import { argmax, createRunState, forward } from '../model/reference.js';
import { llama2cConfig, writeSynthCheckpoint } from '../model/synth.js';
import { exportOnnx, ONNX_OPSET, onnxNames } from './onnx.js';

const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-onnx-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// grouped-query attention (2 query heads per kv head) and more than one layer
const tiny = llama2cConfig({ dim: 32, hiddenDim: 72, nLayers: 2, nHeads: 4, nKvHeads: 2, vocabSize: 400, seqLen: 32 });

async function tinyModel() {
  const path = join(dir, 'tiny.bin');
  await writeSynthCheckpoint(tiny, 3, path);
  const b = readFileSync(path);
  return loadLlama2c(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer);
}

describe('exportOnnx', () => {
  it('uses only standard-domain ops at opset 17, with the KV cache as inputs and outputs', async () => {
    const bytes = exportOnnx(await tinyModel());
    const m = onnxProto.onnx.ModelProto.decode(bytes);
    const graph = onnxProto.onnx.GraphProto.fromObject(m.graph!);
    expect(m.opsetImport.map((o) => [o.domain, Number(o.version)])).toEqual([['', ONNX_OPSET]]);
    expect(graph.node.every((n) => !n.domain)).toBe(true);
    const inputs = graph.input.map((i) => i.name);
    expect(inputs).toEqual(['input_ids', 'position_ids', 'past_key_values.0.key', 'past_key_values.0.value', 'past_key_values.1.key', 'past_key_values.1.value']);
    expect(graph.output.map((o) => o.name)).toEqual(['logits', 'present.0.key', 'present.0.value', 'present.1.key', 'present.1.value']);
  });

  it('gives the reference forward pass\'s logits in onnxruntime, prompt batched then one token a step', async () => {
    const model = await tinyModel();
    const session = await ort.InferenceSession.create(exportOnnx(model), { executionProviders: ['wasm'] });
    const state = createRunState(tiny);
    const prompt = [1, 57, 203, 9, 311];
    const steps = 12;
    let past: ort.Tensor[][] = Array.from({ length: tiny.nLayers }, () => [0, 1].map(() => new ort.Tensor('float32', new Float32Array(0), [1, tiny.nKvHeads, 0, tiny.headSize])));
    let feed = prompt;
    let pos = 0;
    let want: Float32Array = new Float32Array();
    for (let i = 0; i < prompt.length; i++) want = forward(model, state, prompt[i]!, i);
    for (let step = 0; step < steps; step++) {
      const ids = BigInt64Array.from(feed.map(BigInt));
      const positions = BigInt64Array.from(feed.map((_, i) => BigInt(pos + i)));
      const feeds: Record<string, ort.Tensor> = {
        [onnxNames.inputIds]: new ort.Tensor('int64', ids, [1, feed.length]),
        [onnxNames.positionIds]: new ort.Tensor('int64', positions, [1, feed.length]),
      };
      past.forEach(([k, v], l) => { feeds[onnxNames.pastKey(l)] = k!; feeds[onnxNames.pastValue(l)] = v!; });
      const out = await session.run(feeds);
      const logits = out[onnxNames.logits]!.data as Float32Array;
      expect(logits.length).toBe(tiny.vocabSize);
      let worst = 0;
      for (let i = 0; i < logits.length; i++) worst = Math.max(worst, Math.abs(logits[i]! - want[i]!));
      expect(worst).toBeLessThan(1e-4);
      const next = argmax(want, tiny.vocabSize);
      expect(argmax(logits, tiny.vocabSize)).toBe(next);
      past = past.map((_, l) => [out[onnxNames.presentKey(l)]!, out[onnxNames.presentValue(l)]!]);
      expect(past[0]![0]!.dims).toEqual([1, tiny.nKvHeads, pos + feed.length, tiny.headSize]);
      pos += feed.length;
      feed = [next];
      want = forward(model, state, next, pos);
    }
    await session.release();
  });
});
