import { describe, it, expect, beforeAll } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadLlama2c, type Llama2cModel } from '../model/formats/llama2c.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import * as R from '../model/reference.js';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { ReferenceBackend } from '../../test-support/engine/reference-backend.js';
import { assembleEngine, type Engine } from './engine.js';
import { TokenSampler } from './sampling.js';
import { resolveSampling } from './sampling-options.js';
import type { GenerateChunk, GenerateOptions } from './types.js';
import { InvalidArgumentError } from '../errors.js';

const seeded = JSON.parse(readFileSync(new URL('../../test-support/fixtures/stories260K-seeded.json', import.meta.url), 'utf8')) as { tokens: number[]; seed: number; steps: number };

let model: Llama2cModel;
let tokenizer: Tokenizer;
let engine: Engine;

beforeAll(() => {
  model = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
  tokenizer = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
  engine = assembleEngine(model.config, 1, new ReferenceBackend({ config: model.config, weights: model.weights }), tokenizer, async () => [], async () => {});
});

async function collect(it: AsyncIterable<GenerateChunk>): Promise<GenerateChunk[]> {
  const out: GenerateChunk[] = [];
  for await (const c of it) out.push(c);
  return out;
}

/** The oracle's logits after each of `prompt` then `tokens` (one row per generated token). */
function oracleLogits(prompt: number[], tokens: number[]): Float32Array[] {
  const s = R.createRunState(model.config);
  const out: Float32Array[] = [];
  let logits = new Float32Array(0);
  prompt.forEach((t, pos) => (logits = R.forward(model, s, t, pos).slice()));
  for (const [i, t] of tokens.entries()) {
    out.push(logits);
    logits = R.forward(model, s, t, prompt.length + i).slice();
  }
  return out;
}

/** ln softmax(logits)[i], in f64, written out again. */
function logSoftmax(logits: Float32Array, i: number): number {
  const m = Math.max(...logits);
  return logits[i]! - m - Math.log(logits.reduce((a, x) => a + Math.exp(x - m), 0));
}

describe('samplers and logprobs through generate (CPU oracle)', () => {
  it('the default chain at temperature 1, top-p 0.9 is llama2.c run.c\'s seeded sample', async () => {
    const chunks = await collect(engine.generate('', { temperature: 1, topP: 0.9, seed: seeded.seed, maxTokens: seeded.steps }));
    expect(chunks.filter((c) => !c.done).map((c) => c.token)).toEqual(seeded.tokens.slice(1));
  });

  it('topLogprobs 5: the sampled token and the 5 most likely, each the oracle\'s log-softmax; bytes add up to the text', async () => {
    const prompt = 'Once upon a time';
    const chunks = (await collect(engine.generate(prompt, { temperature: 0, maxTokens: 10, topLogprobs: 5 }))).filter((c) => !c.done);
    const ids = engine.encode(prompt);
    const logits = oracleLogits(ids, chunks.map((c) => c.token));
    chunks.forEach((c, i) => {
      const lp = c.logprobs!;
      expect(lp.token).toBe(c.token);
      expect(lp.top).toHaveLength(5);
      expect(lp.top[0]!.token).toBe(c.token); // greedy
      expect(Math.abs(lp.logprob - logSoftmax(logits[i]!, c.token))).toBeLessThan(1e-6);
      const order = Array.from(logits[i]!.keys()).sort((a, b) => logits[i]![b]! - logits[i]![a]! || a - b).slice(0, 5);
      expect(lp.top.map((t) => t.token)).toEqual(order);
      for (const t of lp.top) expect(Math.abs(t.logprob - logSoftmax(logits[i]!, t.token))).toBeLessThan(1e-6);
      for (let j = 1; j < 5; j++) expect(lp.top[j]!.logprob).toBeLessThanOrEqual(lp.top[j - 1]!.logprob);
    });
    const bytes = chunks.flatMap((c) => c.logprobs!.bytes);
    expect(new TextDecoder().decode(new Uint8Array(bytes))).toBe(chunks.map((c) => c.text).join(''));
    // Without the option, no chunk carries logprobs.
    const plain = await collect(engine.generate(prompt, { temperature: 0, maxTokens: 3 }));
    expect(plain.some((c) => c.logprobs)).toBe(false);
  });

  it('logprobs are the raw logits\', whatever the sampler did: a forced token keeps its low log-probability', async () => {
    const chunks = (await collect(engine.generate('Once', { temperature: 0, maxTokens: 3, logprobs: true, logitBias: { 400: 100 } }))).filter((c) => !c.done);
    expect(chunks.map((c) => c.token)).toEqual([400, 400, 400]);
    const logits = oracleLogits(engine.encode('Once'), [400, 400, 400]);
    chunks.forEach((c, i) => {
      expect(c.logprobs!.top).toEqual([]);
      expect(c.logprobs!.logprob).toBeLessThan(-1);
      expect(Math.abs(c.logprobs!.logprob - logSoftmax(logits[i]!, 400))).toBeLessThan(1e-6);
    });
  });

  it('every sampler option reaches the chain, with the prompt in the penalty window; a seeded run is reproducible', async () => {
    const opts: GenerateOptions = {
      seed: 31, temperature: 0.9, topP: 0.95, topK: 20, minP: 0.02, repetitionPenalty: 1.3, presencePenalty: 0.4,
      frequencyPenalty: 0.2, penaltyLastN: 16, logitBias: { 13: -100, 29: 1.5 }, maxTokens: 40, ignoreEos: true,
    };
    const prompt = 'Lily and Ben played';
    const run = async () => (await collect(engine.generate(prompt, opts))).filter((c) => !c.done).map((c) => c.token);
    const a = await run();
    expect(await run()).toEqual(a);
    // The same chain driven by hand over the oracle's logits.
    const ids = engine.encode(prompt);
    const logits = oracleLogits(ids, a);
    const sampler = new TokenSampler(512, resolveSampling(opts, 512));
    ids.forEach((t) => sampler.accept(t));
    const want = logits.map((l) => {
      const t = sampler.sample(l.slice());
      sampler.accept(t);
      return t;
    });
    expect(a).toEqual(want);
    expect(a).not.toContain(13);
    // Penalties change the tokens: without them the run differs.
    const loose = (await collect(engine.generate(prompt, { ...opts, repetitionPenalty: 1, presencePenalty: 0, frequencyPenalty: 0 }))).filter((c) => !c.done).map((c) => c.token);
    expect(loose).not.toEqual(a);
  });

  it('a bad option is an InvalidArgumentError naming it and its range; the next request runs', async () => {
    const cases: [GenerateOptions, RegExp][] = [
      [{ topK: -1 }, /topK \(top_k\) must be a whole number ≥ 0, got -1/],
      [{ minP: 1.5 }, /minP \(min_p\) must be in \[0, 1\], got 1.5/],
      [{ minP: -0.1 }, /minP \(min_p\) must be in \[0, 1\], got -0.1/],
      [{ logitBias: { 512: 1 } }, /logitBias \(logit_bias\) key must be a token id in \[0, 512\)/],
      [{ topLogprobs: 30 }, /topLogprobs \(top_logprobs\) must be at most 20/],
    ];
    for (const [opts, message] of cases) {
      const e = await collect(engine.generate('Once', opts)).catch((err: unknown) => err);
      expect(e, JSON.stringify(opts)).toBeInstanceOf(InvalidArgumentError);
      expect((e as Error).message).toMatch(message);
    }
    const next = await collect(engine.generate('', { maxTokens: 2, temperature: 0 }));
    expect(next.at(-1)!.stats!.generatedTokens).toBe(2);
  });
});
