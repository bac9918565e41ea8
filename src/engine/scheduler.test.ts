import { describe, it, expect, beforeAll } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadLlama2c } from '../model/formats/llama2c.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { ReferenceBackend } from '../../test-support/engine/reference-backend.js';
import { assembleEngine, createEngine, type Engine } from './engine.js';
import type { GenerateChunk } from './types.js';
import { AbortedError, InvalidArgumentError, DisposedError } from '../errors.js';

const greedy = JSON.parse(readFileSync(new URL('../../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[]; text: string };

let engine: Engine;
let tokenizer: Tokenizer;

function makeEngine(opts: { maxRows?: number; contextLength?: number } = {}): Engine {
  const m = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
  const backend = new ReferenceBackend({ config: m.config, weights: m.weights }, opts);
  return assembleEngine(m.config, 1, backend, tokenizer, async () => [], async () => {});
}

/** A backend whose greedy choices follow a script: step i's logits are one-hot at script[i]. */
function scripted(script: number[]): Engine {
  let i = 0;
  const backend = {
    maxRows: 64,
    contextLength: 512,
    async step(_rows: unknown[], logitsFor: number[]) {
      return logitsFor.map(() => {
        const l = new Float32Array(512);
        l[script[Math.min(i++, script.length - 1)]!] = 1;
        return l;
      });
    },
  };
  const m = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
  return assembleEngine(m.config, 1, backend, tokenizer, async () => [], async () => {});
}

async function collect(it: AsyncIterable<GenerateChunk>): Promise<GenerateChunk[]> {
  const out: GenerateChunk[] = [];
  for await (const c of it) out.push(c);
  return out;
}

beforeAll(() => {
  tokenizer = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
  engine = makeEngine();
});

describe('Scheduler over the CPU oracle', () => {
  it('streams the greedy sample, one chunk per token, then a final chunk with stats', async () => {
    const chunks = await collect(engine.generate('', { maxTokens: 256, temperature: 0 }));
    const last = chunks[chunks.length - 1]!;
    expect(last.done).toBe(true);
    expect(last.stats!.generatedTokens).toBe(256);
    expect(last.stats!.finishReason).toBe('length');
    expect(chunks.slice(0, -1).map((c) => c.token)).toEqual(greedy.tokens.slice(1));
    expect(chunks.map((c) => c.text).join('')).toBe(greedy.text);
  });

  it('prefills in chunks: the prompt\'s rows cross maxRows boundaries with the same result', async () => {
    const prompt = 'Once upon a time, there was a big dog who liked to run';
    const a = await collect(makeEngine({ maxRows: 3 }).generate(prompt, { maxTokens: 20, temperature: 0 }));
    const b = await collect(makeEngine({ maxRows: 64 }).generate(prompt, { maxTokens: 20, temperature: 0 }));
    expect(a.map((c) => c.token)).toEqual(b.map((c) => c.token));
  });

  it('stops at a stop string, which is not part of the output', async () => {
    const chunks = await collect(engine.generate('', { maxTokens: 256, temperature: 0, stop: ['red ball'] }));
    const text = chunks.map((c) => c.text).join('');
    expect(text).toBe('Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, ');
    expect(chunks[chunks.length - 1]!.stats!.finishReason).toBe('stop');
  });

  it('stops when the model samples BOS or EOS, unless ignoreEos', async () => {
    const stopped = await collect(scripted([300, 301, 1, 302]).generate('', { maxTokens: 10, temperature: 0 }));
    expect(stopped.slice(0, -1).map((c) => c.token)).toEqual([300, 301]);
    expect(stopped[stopped.length - 1]!.stats!.finishReason).toBe('stop');
    const eos = await collect(scripted([300, 2]).generate('', { maxTokens: 10, temperature: 0 }));
    expect(eos.slice(0, -1).map((c) => c.token)).toEqual([300]);
    const ignored = await collect(scripted([300, 301, 1, 302]).generate('', { maxTokens: 4, temperature: 0, ignoreEos: true }));
    expect(ignored.slice(0, -1).map((c) => c.token)).toEqual([300, 301, 1, 302]);
  });

  it('caps maxTokens at the context and says so (finish reason length)', async () => {
    const small = makeEngine({ contextLength: 20 });
    const chunks = await collect(small.generate('Once upon a time', { maxTokens: 1000, temperature: 0, ignoreEos: true }));
    const stats = chunks[chunks.length - 1]!.stats!;
    expect(stats.promptTokens + stats.generatedTokens).toBe(20);
    expect(chunks.filter((c) => c.token >= 0)).toHaveLength(20 - 5);
    expect(stats.finishReason).toBe('length');
    // Capped tokens are the same as the uncapped run's first ones.
    const full = await collect(engine.generate('Once upon a time', { maxTokens: 15, temperature: 0, ignoreEos: true }));
    expect(chunks.map((c) => c.token)).toEqual(full.map((c) => c.token));
  });

  it('rejects a prompt longer than the context with a typed error that names both lengths; the next request is unharmed', async () => {
    const small = makeEngine({ contextLength: 8 });
    const long = 'Once upon a time there was a little girl named Lily';
    const n = small.encode(long).length;
    expect(n).toBeGreaterThan(8);
    const e = await collect(small.generate(long, { maxTokens: 4 })).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(InvalidArgumentError);
    expect((e as InvalidArgumentError).code).toBe('INVALID_ARGUMENT');
    expect((e as Error).message).toContain(`the prompt is ${n} tokens but maxContext is 8`);
    expect((e as InvalidArgumentError).remedy).toContain('Shorten the prompt to at most 7 tokens, or create the engine with a larger maxContext');
    // Exactly the context is still too long (no room for a new token); one less fits and gives one token.
    const ids = small.encode(long);
    await expect(collect(small.generateTokens(ids.slice(0, 8), { maxTokens: 4 }))).rejects.toThrow(/the prompt is 8 tokens but maxContext is 8/);
    const fits = await collect(small.generateTokens(ids.slice(0, 7), { maxTokens: 4, temperature: 0, ignoreEos: true }));
    expect(fits.filter((c) => c.token >= 0)).toHaveLength(1);
    expect(fits[fits.length - 1]!.stats).toMatchObject({ promptTokens: 7, generatedTokens: 1, finishReason: 'length' });
    // The refused requests left nothing behind: the next one is the reference.
    const next = await collect(small.generate('', { maxTokens: 7, temperature: 0 }));
    expect(next.filter((c) => c.token >= 0).map((c) => c.token)).toEqual(greedy.tokens.slice(1, 8));
  });

  it('createEngine refuses a maxContext above the model\'s trained context, naming the limit', async () => {
    const bytes = (file: string) => new Uint8Array(readFileSync(resolve(modelsDir, file))).buffer;
    // CPU ranks, so Node gets as far as the option checks (they come before any worker starts).
    const e = await createEngine({ model: bytes('stories260K.bin'), tokenizer: bytes('tok512.bin'), devices: 'cpu', maxContext: 513 }).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(InvalidArgumentError);
    expect((e as Error).message).toContain('maxContext 513 exceeds the model\'s trained context of 512 positions');
    expect((e as InvalidArgumentError).remedy).toBe('Pass maxContext ≤ 512, or leave it unset');
  });

  it('an empty prompt is BOS alone (run.c\'s unconditional story); no tokens at all is refused', async () => {
    expect(engine.encode('')).toEqual([1]);
    const chunks = await collect(engine.generate('', { maxTokens: 5, temperature: 0 }));
    expect(chunks[chunks.length - 1]!.stats).toMatchObject({ promptTokens: 1, generatedTokens: 5 });
    const e = await collect(engine.generateTokens([], { maxTokens: 5 })).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(InvalidArgumentError);
    expect((e as Error).message).toMatch(/the prompt has no tokens/);
    expect((e as InvalidArgumentError).remedy).toMatch(/BOS/);
  });

  it('prompt ids outside the vocabulary are refused; the next request is unharmed', async () => {
    for (const bad of [[1, 512], [1, -1], [1, 2.5], [1, NaN], [600]]) {
      const e = await collect(engine.generateTokens(bad, { maxTokens: 2 })).catch((err: unknown) => err);
      expect(e, String(bad)).toBeInstanceOf(InvalidArgumentError);
      expect((e as Error).message).toMatch(/is outside the vocabulary \[0, 512\)/);
    }
    const next = await collect(engine.generate('', { maxTokens: 5, temperature: 0 }));
    expect(next.filter((c) => c.token >= 0).map((c) => c.token)).toEqual(greedy.tokens.slice(1, 6));
  });

  it('maxTokens: 0 ends at once with reason length; negative or fractional is refused', async () => {
    const none = await collect(engine.generate('Once upon a time', { maxTokens: 0, temperature: 0 }));
    expect(none).toHaveLength(1);
    expect(none[0]!.stats).toMatchObject({ generatedTokens: 0, finishReason: 'length' });
    for (const bad of [-1, 1.5, NaN, Infinity]) {
      await expect(collect(engine.generate('Once', { maxTokens: bad })), `maxTokens ${bad}`).rejects.toThrow(/maxTokens must be a whole number ≥ 0/);
    }
  });

  it('aborts promptly with AbortedError and runs the next request normally', async () => {
    const ac = new AbortController();
    const got: number[] = [];
    const run = (async () => {
      for await (const c of engine.generate('', { maxTokens: 256, temperature: 0, signal: ac.signal })) {
        got.push(c.token);
        if (got.length === 5) ac.abort();
      }
    })();
    await expect(run).rejects.toThrow(AbortedError);
    expect(got.length).toBe(5);
    const next = await collect(engine.generate('', { maxTokens: 8, temperature: 0 }));
    expect(next.slice(0, -1).map((c) => c.token)).toEqual(greedy.tokens.slice(1, 9));
  });

  it('breaking out of the loop releases the engine for the next request', async () => {
    for await (const c of engine.generate('', { maxTokens: 256, temperature: 0 })) if (c.token >= 0) break;
    const next = await collect(engine.generate('', { maxTokens: 4, temperature: 0 }));
    expect(next.slice(0, -1).map((c) => c.token)).toEqual(greedy.tokens.slice(1, 5));
  });

  it('starts concurrent requests in arrival order, each stream with only its own tokens', async () => {
    const order: string[] = [];
    const run = async (name: string, prompt: string) => {
      const toks: number[] = [];
      for await (const c of engine.generate(prompt, { maxTokens: 6, temperature: 0 })) {
        if (toks.length === 0) order.push(name);
        if (c.token >= 0) toks.push(c.token);
      }
      return toks;
    };
    const [a, b] = await Promise.all([run('a', ''), run('b', 'Lily and Ben')]);
    expect(order).toEqual(['a', 'b']);
    expect(a).toEqual(greedy.tokens.slice(1, 7));
    const alone = await run('c', 'Lily and Ben');
    expect(b).toEqual(alone);
  });

  it('batches concurrent requests into shared steps, each with the tokens it gets alone', async () => {
    const m = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
    const backend = new ReferenceBackend({ config: m.config, weights: m.weights }, { maxSlots: 3, maxRows: 8 });
    const slotsPerStep: number[] = [];
    const step = backend.step.bind(backend);
    backend.step = (rows, logitsFor) => {
      slotsPerStep.push(new Set(rows.map((r) => r.slot)).size);
      return step(rows, logitsFor);
    };
    const batched = assembleEngine(m.config, 1, backend, tokenizer, async () => [], async () => {});
    const prompts = ['', 'Lily and Ben went to the park', 'The cat sat', 'Once upon a time, a big fish'];
    const run = async (e: Engine, p: string, n: number) => (await collect(e.generate(p, { maxTokens: n, temperature: 0 }))).filter((c) => !c.done).map((c) => c.token);
    const together = await Promise.all(prompts.map((p, i) => run(batched, p, 10 + 3 * i)));
    const alone = [];
    for (const [i, p] of prompts.entries()) alone.push(await run(makeEngine(), p, 10 + 3 * i));
    expect(together).toEqual(alone);
    // Three slots: up to three sequences shared a step; the fourth joined when one left.
    expect(Math.max(...slotsPerStep)).toBe(3);
  });

  it('gives the same tokens and logprobs when the backend reuses its logits rows every step (valid until the next step)', async () => {
    const m = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
    const backend = new ReferenceBackend({ config: m.config, weights: m.weights }, { maxSlots: 2, maxRows: 8 });
    const rowsOut: Float32Array[] = [];
    const step = backend.step.bind(backend);
    backend.step = async (rows, logitsFor) => (await step(rows, logitsFor)).map((l, j) => {
      const out = (rowsOut[j] ??= new Float32Array(l.length));
      out.set(l);
      return out;
    });
    const reused = assembleEngine(m.config, 1, backend, tokenizer, async () => [], async () => {});
    const opts = [{ temperature: 0, topLogprobs: 2 }, { temperature: 1, seed: 7, topP: 0.9, topLogprobs: 2 }];
    const run = async (e: Engine, p: string, i: number) =>
      (await collect(e.generate(p, { maxTokens: 12, ...opts[i] }))).filter((c) => !c.done).map((c) => [c.token, c.logprobs]);
    const together = await Promise.all(['Lily and Ben', 'The cat sat'].map((p, i) => run(reused, p, i)));
    const alone = [await run(makeEngine(), 'Lily and Ben', 0), await run(makeEngine(), 'The cat sat', 1)];
    expect(together).toEqual(alone);
    expect(rowsOut).toHaveLength(2);
  });

  it('never splits a UTF-8 character across chunks (byte-fallback tokens are held back)', async () => {
    // "é" is 0xC3 0xA9: byte-fallback ids <0xC3> = 3 + 0xC3 and <0xA9> = 3 + 0xA9 in llama2.c vocabularies.
    const chunks = await collect(scripted([3 + 0xc3, 3 + 0xa9, 3 + 0xc3]).generate('', { maxTokens: 3, temperature: 0 }));
    expect(chunks.map((c) => c.text)).toEqual(['', 'é', '', '\uFFFD']);
  });

  it('completions.create returns the OpenAI completion shape, whole or streamed', async () => {
    const whole = await engine.completions.create({ prompt: '', max_tokens: 12, temperature: 0 });
    expect(whole.object).toBe('text_completion');
    expect(whole.choices[0]!.text).toBe(tokenizer.decodeText(greedy.tokens.slice(1, 13)));
    expect(whole.choices[0]!.finish_reason).toBe('length');
    expect(whole.usage).toEqual({ prompt_tokens: 1, completion_tokens: 12, total_tokens: 13, prompt_tokens_details: { cached_tokens: 0 } });
    const stream = await engine.completions.create({ prompt: '', max_tokens: 12, temperature: 0, stream: true });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.map((c) => c.choices[0]!.text).join('')).toBe(whole.choices[0]!.text);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[chunks.length - 1]!.choices[0]!.finish_reason).toBe('length');
    expect(chunks[chunks.length - 1]!.usage).toEqual(whole.usage);
    const stopped = await engine.completions.create({ prompt: '', max_tokens: 64, temperature: 0, stop: ' named' });
    expect(stopped.choices[0]!.text).toBe('Once upon a time, there was a little girl');
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
  });

  it('refuses to run after dispose', async () => {
    const e = makeEngine();
    await e.dispose();
    expect(() => e.generate('', {})).toThrow(DisposedError);
    await expect(e.stats()).rejects.toThrow(DisposedError);
    await expect(e.resetStats()).rejects.toThrow(DisposedError);
  });

  it('topP outside [0, 1] is refused with a remedy (run.c would quietly use 0.9); 0 and 1 sample the whole distribution', async () => {
    for (const bad of [-0.5, 1.5, NaN]) {
      await expect(collect(engine.generate('Once', { topP: bad })), `topP ${bad}`).rejects.toThrow(/topP must be in \[0, 1\], got .*\. Pass a cutoff/);
    }
    for (const ok of [0, 1]) {
      const out = await collect(engine.generate('Once', { topP: ok, maxTokens: 2, seed: 7 }));
      expect(out.at(-1)!.stats?.generatedTokens, `topP ${ok}`).toBe(2);
    }
  });
});
