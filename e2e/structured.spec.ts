import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, expect } from './fixtures.js';
import { Ajv } from 'ajv';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import type { ModelConfig } from '../src/model/config.js';
import { encodeGguf } from '../src/model/formats/gguf-write.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import { modelsDir } from '../test-support/fixtures/paths.js';
import { randomWeights } from '../test-support/model/hf-testing.js';
import { ADDED_TOKENS, spmChatKv, TINYLLAMA_TEMPLATE } from '../test-support/model/spm-chat-fixture.js';
import type { ChatCompletion, ChatCompletionChunk } from '../src/engine/chat-completions.js';
import type { Completion, CompletionChunk } from '../src/engine/completions.js';
import type { GenerateChunk, GenerateOptions } from '../src/engine/types.js';
import type { JsonSchema, ResponseFormat } from '../src/engine/structured.js';
import type { Harness } from '../src/cli/browser.js';

// Structured output through the real engine in Chromium (stories260K, whose near-random text
// leaves the grammar to do the work); one engine serves every test.
const base: PageGenerateOptions = { model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', devices: 'gpu', tp: 1, maxBatch: 4, prompt: '', maxTokens: 0, temperature: 1, topP: 0.9, seed: 1, cache: false };

const person: JsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 6 },
    age: { type: 'integer', minimum: 1, maximum: 99 },
    pet: { enum: ['cat', 'dog', 'none'] },
    good: { type: 'boolean' },
  },
  required: ['name', 'age', 'pet'],
  additionalProperties: false,
};
const format: ResponseFormat = { type: 'json_schema', json_schema: { name: 'person', schema: person, strict: true } };

const generate = (h: Harness, prompt: string, opts: Omit<GenerateOptions, 'signal'>) =>
  h.page.evaluate(([o, prompt, opts]) => window.tp.api.generateChunks(o, prompt, opts), [base, prompt, opts] as const);
const completions = (h: Harness, p: Parameters<Window['tp']['api']['completions']>[1]) =>
  h.page.evaluate(([o, p]) => window.tp.api.completions(o, p), [base, p] as const);

function result(r: Awaited<ReturnType<typeof generate>>): { text: string; last: GenerateChunk } {
  if ('error' in r) throw new Error(`${r.error.name}: ${r.error.message}`);
  return { text: r.chunks.map((c) => c.text).join(''), last: r.chunks.at(-1)! };
}

test.describe.configure({ mode: 'serial' });

test('json_schema on stories260K: 20 seeded samples (4 at a time) all close the JSON, parse and validate', async ({ harness }) => {
  const validate = new Ajv().compile(person);
  const prompts = ['Once upon a time', 'Lily', 'The cat', 'One day'];
  const run = (seed: number) => generate(harness, prompts[seed % 4]!, { responseFormat: format, seed, maxTokens: 64 }).then(result);
  // The first loads the engine (the page keeps it); the rest share its batch.
  const runs = [await run(1)];
  runs.push(...(await Promise.all(Array.from({ length: 19 }, (_, i) => run(i + 2)))));
  for (const { text, last } of runs) {
    expect(last.stats!.finishReason, text).toBe('stop');
    const value: unknown = JSON.parse(text);
    expect(validate(value), `${text}: ${JSON.stringify(validate.errors)}`).toBe(true);
  }
  // Seeds differ, so the samples do.
  expect(new Set(runs.map((r) => r.text)).size).toBeGreaterThan(10);
});

test('completions with response_format: greedy, whole and streamed alike; max_tokens short of the closing brace is length; a bad schema is INVALID_ARGUMENT', async ({ harness }) => {
  const p = { prompt: 'Once upon a time', max_tokens: 64, temperature: 0, response_format: format };
  const whole = (await completions(harness, p)) as Completion;
  expect(whole.choices[0]!.finish_reason).toBe('stop');
  expect(new Ajv().validate(person, JSON.parse(whole.choices[0]!.text))).toBe(true);
  const streamed = (await completions(harness, { ...p, stream: true })) as CompletionChunk[];
  expect(streamed.map((c) => c.choices[0]!.text).join('')).toBe(whole.choices[0]!.text);
  expect(streamed.at(-1)!.choices[0]!.finish_reason).toBe('stop');

  const cut = (await completions(harness, { ...p, max_tokens: 5 })) as Completion;
  expect(cut.choices[0]!.finish_reason).toBe('length');
  expect(cut.usage.completion_tokens).toBe(5);
  expect(whole.choices[0]!.text.startsWith(cut.choices[0]!.text)).toBe(true);

  const objectMode = (await completions(harness, { prompt: 'Lily', max_tokens: 48, seed: 3, response_format: { type: 'json_object' } })) as Completion;
  if (objectMode.choices[0]!.finish_reason === 'stop') expect(typeof JSON.parse(objectMode.choices[0]!.text)).toBe('object');
  else expect(objectMode.choices[0]!.text.startsWith('{')).toBe(true);

  const bad = await completions(harness, { prompt: '', response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'foo' } } } });
  expect('error' in bad && bad.error).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('response_format') });
});

test('chat.completions with response_format on a chat GGUF (tok512, TinyLlama\'s template, random weights, CPU ranks): greedy whole and streamed alike, seeded samples, all validate', async ({ harness }) => {
  const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-structured-chat-'));
  try {
    const config: ModelConfig = {
      dim: 64, hiddenDim: 128, nLayers: 2, nHeads: 4, nKvHeads: 2, vocabSize: 512 + ADDED_TOKENS.length, seqLen: 256, headSize: 16,
      sharedClassifier: true, normEps: 1e-5, ropeTheta: 1e4, ropeStyle: 'interleaved',
    };
    const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
    const path = join(dir, 'chat.gguf');
    writeFileSync(path, encodeGguf({ config, weights: randomWeights(config, 7, 3) }, 'f32', spmChatKv(tok, TINYLLAMA_TEMPLATE)));
    const o: PageGenerateOptions = { ...base, model: harness.server.mountFile('/files/structured-chat/model.gguf', path), tokenizer: undefined, devices: 'cpu' };
    const chat = (p: Parameters<Window['tp']['api']['chat']>[1]) => harness.page.evaluate(([o, p]) => window.tp.api.chat(o, p), [o, p] as const);
    const validate = new Ajv().compile(person);
    const p = { messages: [{ role: 'user' as const, content: 'Who is Lily? Answer in JSON.' }], max_tokens: 96, temperature: 0, response_format: format };
    const whole = (await chat(p)) as ChatCompletion;
    expect(whole.object, JSON.stringify(whole)).toBe('chat.completion');
    const content = whole.choices[0]!.message.content!;
    expect(whole.choices[0]!.finish_reason, content).toBe('stop');
    expect(validate(JSON.parse(content)), `${content}: ${JSON.stringify(validate.errors)}`).toBe(true);
    const streamed = (await chat({ ...p, stream: true })) as ChatCompletionChunk[];
    expect(streamed[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(streamed.map((c) => c.choices[0]!.delta.content ?? '').join('')).toBe(content);
    expect(streamed.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    // Sampled, 4 seeds at once: every reply still closes the JSON and validates.
    const sampled = (await Promise.all([1, 2, 3, 4].map((seed) => chat({ ...p, temperature: 1, seed })))) as ChatCompletion[];
    for (const r of sampled) {
      const text = r.choices[0]!.message.content!;
      expect(r.choices[0]!.finish_reason, text).toBe('stop');
      expect(validate(JSON.parse(text)), `${text}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
