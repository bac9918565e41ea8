import { describe, it, expect, beforeAll } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadLlama2c } from '../model/formats/llama2c.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { ReferenceBackend } from '../../test-support/engine/reference-backend.js';
import { assembleEngine, type Engine } from './engine.js';
import type { CompletionChunk } from './completions.js';
import { InvalidArgumentError } from '../errors.js';

const greedy = JSON.parse(readFileSync(new URL('../../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[] };

let engine: Engine;
let tokenizer: Tokenizer;

beforeAll(() => {
  const m = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
  tokenizer = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
  engine = assembleEngine(m.config, 1, new ReferenceBackend({ config: m.config, weights: m.weights }), tokenizer, async () => [], async () => {});
});

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const c of it) out.push(c);
  return out;
}

describe('engine.completions: logprobs and samplers (CPU oracle)', () => {
  it('logprobs: 5 gives OpenAI\'s legacy arrays, one entry per token, the same as generate\'s', async () => {
    const r = await engine.completions.create({ prompt: 'Once upon a time', max_tokens: 12, temperature: 0, logprobs: 5 });
    const lp = r.choices[0]!.logprobs!;
    const text = r.choices[0]!.text;
    expect(lp.tokens).toHaveLength(r.usage.completion_tokens);
    expect(lp.tokens.join('')).toBe(text);
    lp.text_offset.forEach((o, i) => expect(text.slice(o, o + lp.tokens[i]!.length)).toBe(lp.tokens[i]));
    const chunks = (await all(engine.generate('Once upon a time', { maxTokens: 12, temperature: 0, topLogprobs: 5 }))).filter((c) => !c.done);
    expect(lp.token_logprobs).toEqual(chunks.map((c) => c.logprobs!.logprob));
    lp.top_logprobs.forEach((top, i) => {
      expect(Object.keys(top).length).toBeLessThanOrEqual(5);
      // Greedy: the chosen token is the most likely one and is listed with its logprob.
      expect(top[lp.tokens[i]!]).toBe(lp.token_logprobs[i]);
      expect(Math.max(...Object.values(top))).toBe(lp.token_logprobs[i]);
    });
    const none = await engine.completions.create({ prompt: 'Once', max_tokens: 2, temperature: 0 });
    expect(none.choices[0]!.logprobs).toBeNull();
  });

  it('streamed, the chunks\' logprobs add up to the whole completion\'s, every entry on a chunk with text', async () => {
    const p = { prompt: '', max_tokens: 24, temperature: 0, logprobs: 2 };
    const whole = await engine.completions.create(p);
    const chunks: CompletionChunk[] = await all(await engine.completions.create({ ...p, stream: true }));
    const lps = chunks.map((c) => c.choices[0]!.logprobs!);
    expect(lps.flatMap((l) => l.tokens)).toEqual(whole.choices[0]!.logprobs!.tokens);
    expect(lps.flatMap((l) => l.token_logprobs)).toEqual(whole.choices[0]!.logprobs!.token_logprobs);
    expect(lps.flatMap((l) => l.text_offset)).toEqual(whole.choices[0]!.logprobs!.text_offset);
    expect(lps.flatMap((l) => l.top_logprobs)).toEqual(whole.choices[0]!.logprobs!.top_logprobs);
  });

  it('takes OpenAI\'s and llama.cpp\'s sampler names: the same tokens as generate\'s camelCase options', async () => {
    // top_k 1 at temperature 1 is greedy.
    const k1 = await engine.completions.create({ prompt: '', max_tokens: 10, temperature: 1, top_k: 1, seed: 3 });
    expect(k1.choices[0]!.text).toBe(tokenizer.decodeText(greedy.tokens.slice(1, 11)));
    const forced = await engine.completions.create({ prompt: 'Once', max_tokens: 3, temperature: 0, logit_bias: { 400: 100 } });
    expect(forced.choices[0]!.text).toBe(tokenizer.decodeText([400, 400, 400], engine.encode('Once').at(-1)));
    const p = { prompt: 'Lily', max_tokens: 20, seed: 12, temperature: 0.8, top_p: 0.9, top_k: 30, min_p: 0.05, repeat_penalty: 1.2, repeat_last_n: 10, presence_penalty: 0.5, frequency_penalty: 0.5 };
    const viaOpenAi = await engine.completions.create(p);
    const viaGenerate = await all(engine.generate('Lily', {
      maxTokens: 20, seed: 12, temperature: 0.8, topP: 0.9, topK: 30, minP: 0.05, repetitionPenalty: 1.2, penaltyLastN: 10, presencePenalty: 0.5, frequencyPenalty: 0.5,
    }));
    expect(viaOpenAi.choices[0]!.text).toBe(viaGenerate.map((c) => c.text).join(''));
    const unpenalised = await engine.completions.create({ ...p, repeat_penalty: 1, presence_penalty: 0, frequency_penalty: 0 });
    expect(unpenalised.choices[0]!.text).not.toBe(viaOpenAi.choices[0]!.text);
  });

  it('bad values reject create() with an InvalidArgumentError naming the parameter', async () => {
    await expect(engine.completions.create({ prompt: '', logprobs: 21 })).rejects.toThrow(/logprobs must be a whole number in 0..20, got 21/);
    await expect(engine.completions.create({ prompt: '', top_k: -1 })).rejects.toThrow(/top_k\) must be a whole number ≥ 0, got -1/);
    await expect(engine.completions.create({ prompt: '', min_p: 2 })).rejects.toThrow(InvalidArgumentError);
    await expect(engine.completions.create({ prompt: '', presence_penalty: -3 })).rejects.toThrow(/presence_penalty\) must be in \[-2, 2\]/);
    // Streaming too: create() itself rejects, before any iteration.
    await expect(engine.completions.create({ prompt: '', top_k: 1.5, stream: true })).rejects.toThrow(/top_k\) must be a whole number/);
  });
});
