import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelFormatError } from '../errors.js';
import greedyFixture from '../../test-support/fixtures/stories260K-greedy.json';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { loadLlama2c } from '../model/formats/llama2c.js';
import { exportHf } from '../../test-support/model/hf-export.js';
import { randomWeights, stackWeights, TINY_QWEN2 } from '../../test-support/model/hf-testing.js';
import * as R from '../model/reference.js';
import { dequantize, quantize } from '../model/formats/gguf-blocks.js';
import { ConvertedSource } from './converted-source.js';
import { mapFiles, openHfModel, readBytes } from './hf-model.js';
import { openSource, type ByteSource } from './source.js';

const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));

/** A source that hands out its bytes in chunks of `n`, so elements straddle chunk boundaries. */
function chunky(bytes: Uint8Array, n: number): ByteSource {
  const inner = openSource(bytes);
  return {
    name: 'chunky',
    size: () => inner.size(),
    head: (k) => inner.head(k),
    identity: async () => 'chunky',
    async *chunks() {
      for (let o = 0; o < bytes.byteLength; o += n) yield bytes.subarray(o, o + n);
    },
  };
}

describe('openHfModel', () => {
  it('stories260K written in HF layout (q/k permuted, 3 shards) gives llama2.c\'s greedy tokens', async () => {
    const files = exportHf(stories.config, stories.weights, { shards: 3, bosTokenId: 1, eosTokenId: 2 });
    expect([...files.keys()]).toContain('model.safetensors.index.json');
    const m = await openHfModel(mapFiles(files));
    expect(m.config).toEqual({ ...stories.config, ropeStyle: 'rotate_half' });
    expect(m.eosTokenIds).toEqual([2]);
    const bytes = await readBytes(m.source);
    expect(bytes.byteLength).toBe(m.f32Bytes);
    const model = { config: m.config, weights: stackWeights(m.config, m.tensors, bytes) };
    // the permuted wq is not llama2.c's, yet the rotate_half model computes the same function
    expect(model.weights.wq).not.toEqual(stories.weights.wq);
    const tokens = R.generate(model, [1], greedyFixture.steps, (l) => R.argmax(l, m.config.vocabSize));
    expect(tokens).toEqual(greedyFixture.tokens);
  });

  it('a BF16 Qwen2-style model loads bit-exactly as the f32 values it was rounded to', async () => {
    const w = randomWeights(TINY_QWEN2, 7);
    const files = exportHf(TINY_QWEN2, w, { dtype: 'BF16', eosTokenId: [3, 5] });
    const m = await openHfModel(mapFiles(files));
    expect(m.architecture).toBe('Qwen2ForCausalLM');
    expect(m.config).toEqual(TINY_QWEN2);
    expect(m.tensors.find((t) => t.name === 'layers.1.attention.bk')!.shape).toEqual([32, 1]);
    expect(m.tensors.at(-1)).toMatchObject({ name: 'output', aliasOf: 'tok_embeddings' });
    const got = stackWeights(m.config, m.tensors, await readBytes(m.source));
    for (const k of ['tokenEmbeddingTable', 'wq', 'bq', 'bk', 'bv', 'wo', 'w2', 'rmsFinalWeight'] as const) expect(got[k]).toEqual(w[k]);
  });

  it('an F16 model keeps its matrices f16 (the stored halves) and its norms and biases f32, each exactly the values it was rounded to', async () => {
    const w = randomWeights(TINY_QWEN2, 9);
    const m = await openHfModel(mapFiles(exportHf(TINY_QWEN2, w, { dtype: 'F16' })));
    const dtypes = Object.fromEntries(m.tensors.map((t) => [t.name, t.dtype]));
    expect(dtypes).toMatchObject({ tok_embeddings: 'f16', 'layers.0.attention.wq': 'f16', 'layers.1.feed_forward.w2': 'f16', 'layers.0.attention.bk': 'f32', 'layers.0.ffn_norm': 'f32', norm: 'f32' });
    expect(m.tensors.find((t) => t.name === 'layers.0.attention.wq')!.byteLength).toBe(TINY_QWEN2.nHeads * TINY_QWEN2.headSize * TINY_QWEN2.dim * 2);
    const bytes = await readBytes(m.source);
    expect(bytes.byteLength).toBe(m.f32Bytes);
    const got = stackWeights(m.config, m.tensors, bytes);
    const f16 = (x: Float32Array) => {
      const y = new Float32Array(x.length);
      dequantize('F16', quantize('F16', x), y);
      return y;
    };
    for (const k of ['tokenEmbeddingTable', 'wq', 'bq', 'wo', 'w2', 'rmsFinalWeight'] as const) expect(got[k], k).toEqual(f16(w[k]!));
  });

  it('a Llama with attention_bias (q/k/v/o biases) loads and runs like the weights it was written from', async () => {
    const c = { ...TINY_QWEN2, outBias: true };
    const w = randomWeights(c, 5, 3);
    const files = exportHf(c, w, { architecture: 'LlamaForCausalLM', dtype: 'BF16' });
    const m = await openHfModel(mapFiles(files));
    expect(m.architecture).toBe('LlamaForCausalLM');
    expect(m.config).toEqual(c);
    const got = stackWeights(m.config, m.tensors, await readBytes(m.source));
    expect(got.bo).toEqual(w.bo);
    const run = (weights: typeof w) => R.generate({ config: c, weights }, [7], 24, (l) => R.argmax(l, c.vocabSize));
    const tokens = run(got);
    expect(tokens).toEqual(run(w));
    // the bias matters: without it the tokens differ
    expect(run({ ...w, bo: undefined })).not.toEqual(tokens);
  });

  it('converts across chunk boundaries that split elements', async () => {
    const w = randomWeights(TINY_QWEN2, 3);
    const file = exportHf(TINY_QWEN2, w, { dtype: 'BF16' }).get('model.safetensors')!;
    const m = await openHfModel(mapFiles({ 'config.json': exportHf(TINY_QWEN2, w).get('config.json')!, 'model.safetensors': file }));
    const whole = await readBytes(m.source);
    const split = await readBytes(new ConvertedSource('x', [chunky(file, 7)], m.segments));
    expect(split).toEqual(whole);
    expect(await new ConvertedSource('x', [chunky(file, 7)], m.segments).head(10)).toEqual(whole.subarray(0, 10));
  });

  it('names what is missing or unexpected', async () => {
    const files = exportHf(stories.config, stories.weights, { shards: 2 });
    const drop = (name: string) => new Map([...files].filter(([k]) => k !== name));
    await expect(openHfModel(mapFiles(drop('model-00002-of-00002.safetensors')))).rejects.toThrow(/model-00002-of-00002.safetensors is missing/);
    await expect(openHfModel(mapFiles(drop('config.json')))).rejects.toThrow(/config.json is missing/);
    const untied = new Map(files);
    untied.set('config.json', new TextEncoder().encode(JSON.stringify({ ...JSON.parse(new TextDecoder().decode(files.get('config.json'))), tie_word_embeddings: false })));
    await expect(openHfModel(mapFiles(untied))).rejects.toThrow(/lack 1 tensor\(s\) config.json implies: lm_head.weight/);
    const fewer = new Map(files);
    fewer.set('config.json', new TextEncoder().encode(JSON.stringify({ ...JSON.parse(new TextDecoder().decode(files.get('config.json'))), num_hidden_layers: 4 })));
    await expect(openHfModel(mapFiles(fewer))).rejects.toThrow(ModelFormatError);
    await expect(openHfModel(mapFiles(fewer))).rejects.toThrow(/model.layers.4.input_layernorm.weight" is not expected by config.json/);
  });
});

describe('the plan of an HF model', () => {
  it('shards q/k/v biases with their matrix rows', async () => {
    const { makePlan } = await import('../parallel/plan.js');
    const m = await openHfModel(mapFiles(exportHf(TINY_QWEN2, randomWeights(TINY_QWEN2, 1), { dtype: 'BF16' })));
    const plan = makePlan(m.config, { tensorParallel: 2 }, m.tensors);
    const r1 = plan.ranks[1]!;
    const bq = r1.slices.find((s) => s.name === 'layers.0.attention.bq')!;
    const wq = r1.slices.find((s) => s.name === 'layers.0.attention.wq')!;
    const bk = r1.slices.find((s) => s.name === 'layers.0.attention.bk')!;
    expect(bq).toMatchObject({ style: 'column', shape: [32, 1], byteLength: 128 });
    expect(wq.shape).toEqual([32, 48]);
    const bqTensor = m.tensors.find((t) => t.name === 'layers.0.attention.bq')!;
    expect(bq.ranges).toEqual([{ fileOffset: bqTensor.offset + 32 * 4, length: 128, dstOffset: 0 }]);
    expect(bk.shape).toEqual([16, 1]); // one of the two kv heads
  });
});
