import { describe, it, expect, beforeAll } from 'vitest';
import { Ajv } from 'ajv';
import type OpenAI from 'openai';
import { stories260KOracle } from '../../test-support/engine/oracle-engine.js';
import { byteLevelTokenizer, randomWeights, TINY_QWEN2 } from '../../test-support/model/hf-testing.js';
import { ReferenceBackend } from '../../test-support/engine/reference-backend.js';
import { assembleEngine, type Engine } from './engine.js';
import { parseTokenizer } from './tokenizers.js';
import type { Completion, CompletionChunk, CompletionParams } from './completions.js';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionParams } from './chat-completions.js';
import type { ResponseFormat } from './structured.js';
import { InvalidArgumentError } from '../errors.js';

// Type-level: our responses are assignable to the `openai` package's types, and its requests'
// response_format to ours (tsc checks these; the calls below give them real values).
const asOpenAiCompletion = (c: Completion): OpenAI.Completion => c;
const asOpenAiChat = (c: ChatCompletion): OpenAI.ChatCompletion => c;
const asOpenAiChatChunk = (c: ChatCompletionChunk): OpenAI.ChatCompletionChunk => c;
const asOpenAiUsage = (u: NonNullable<CompletionChunk['usage']>): OpenAI.CompletionUsage => u;
// The package types a streamed legacy completion as `Stream<Completion>`, yet the API sends
// `finish_reason: null` until the last chunk (as ours does): every other field must match.
type OpenAiStreamedCompletion = Omit<OpenAI.Completion, 'choices'> & {
  choices: (Omit<OpenAI.CompletionChoice, 'finish_reason'> & { finish_reason: OpenAI.CompletionChoice['finish_reason'] | null })[];
};
const asOpenAiCompletionChunk = (c: CompletionChunk): OpenAiStreamedCompletion => c;
/** The last chunk, with its finish_reason, is a whole `OpenAI.Completion`. */
const asOpenAiLastChunk = (c: CompletionChunk): OpenAI.Completion => {
  const [choice] = c.choices;
  if (choice?.finish_reason == null || c.choices.length !== 1) throw new Error(`not a last chunk: ${JSON.stringify(c.choices)}`);
  return { ...c, choices: [{ ...choice, finish_reason: choice.finish_reason }] };
};
const fromOpenAiFormat = (f: NonNullable<OpenAI.ChatCompletionCreateParams['response_format']>): ResponseFormat => f;
const fromOpenAiChatParams = (p: Pick<OpenAI.ChatCompletionCreateParamsNonStreaming, 'max_tokens' | 'temperature' | 'top_p' | 'seed' | 'logprobs' | 'top_logprobs' | 'stop' | 'response_format'>): Omit<ChatCompletionParams, 'messages'> => ({
  ...p, max_tokens: p.max_tokens ?? undefined, temperature: p.temperature ?? undefined, top_p: p.top_p ?? undefined, seed: p.seed ?? undefined,
  logprobs: p.logprobs ?? undefined, top_logprobs: p.top_logprobs ?? undefined, stop: p.stop ?? undefined,
});
const fromOpenAiCompletionParams = (p: Pick<OpenAI.CompletionCreateParamsNonStreaming, 'prompt' | 'max_tokens' | 'logprobs'>): CompletionParams => ({
  prompt: typeof p.prompt === 'string' ? p.prompt : '', max_tokens: p.max_tokens ?? undefined, logprobs: p.logprobs,
});

const pet = {
  type: 'object',
  properties: { kind: { enum: ['cat', 'dog'] }, legs: { type: 'integer', minimum: 0, maximum: 4 } },
  required: ['kind', 'legs'],
  additionalProperties: false,
};
const petFormat: ResponseFormat = { type: 'json_schema', json_schema: { name: 'pet', schema: pet, strict: true } };

let engine: Engine;
beforeAll(() => {
  engine = stories260KOracle().engine;
});

describe('completions and chat.completions against the openai package', () => {
  it('completions.create with response_format: whole and streamed, JSON that validates, usage with cached_tokens', async () => {
    const validate = new Ajv().compile(pet);
    const p = fromOpenAiCompletionParams({ prompt: 'Once upon a time', max_tokens: 40, logprobs: null });
    const whole = asOpenAiCompletion(await engine.completions.create({ ...p, seed: 7, response_format: petFormat, stream: false }));
    expect(whole.choices[0]!.finish_reason).toBe('stop');
    expect(validate(JSON.parse(whole.choices[0]!.text))).toBe(true);
    expect(whole.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
    // The same prompt again: its KV is kept, all but its last token.
    const again = await engine.completions.create({ ...p, seed: 7, response_format: petFormat, stream: true });
    const chunks: CompletionChunk[] = [];
    for await (const c of again) chunks.push(c);
    expect(chunks.map((c) => c.choices[0]!.text).join('')).toBe(whole.choices[0]!.text);
    const usage = asOpenAiUsage(chunks.at(-1)!.usage!);
    expect(usage).toEqual({ ...whole.usage, prompt_tokens_details: { cached_tokens: whole.usage!.prompt_tokens - 1 } });
  });

  it('streamed legacy completion chunks with logprobs: the openai package\'s shapes, pieces of the whole completion', async () => {
    const p = { prompt: 'Once upon a time', max_tokens: 12, temperature: 0, logprobs: 3 };
    const whole = asOpenAiCompletion(await engine.completions.create({ ...p, stream: false }));
    const raw: CompletionChunk[] = [];
    for await (const c of await engine.completions.create({ ...p, stream: true })) raw.push(c);
    const chunks = raw.map(asOpenAiCompletionChunk);
    expect(chunks.length).toBeGreaterThan(1);
    const last = asOpenAiLastChunk(raw.at(-1)!);
    for (const c of chunks) {
      expect(c).toMatchObject({ id: chunks[0]!.id, object: 'text_completion', model: whole.model, created: expect.any(Number) });
      expect(c.choices).toHaveLength(1);
      const [choice] = c.choices;
      expect(choice!.index).toBe(0);
      expect(choice!.finish_reason).toBe(c === chunks.at(-1) ? whole.choices[0]!.finish_reason : null);
      // usage rides only on the last chunk
      expect('usage' in c).toBe(c === chunks.at(-1));
      const lp = choice!.logprobs!;
      for (const k of ['token_logprobs', 'top_logprobs', 'text_offset'] as const) expect(lp[k], k).toHaveLength(lp.tokens!.length);
      for (const top of lp.top_logprobs!) expect(Object.keys(top).length).toBeLessThanOrEqual(3);
    }
    expect(chunks[0]!.id).not.toBe(whole.id);
    expect(chunks.map((c) => c.choices[0]!.text).join('')).toBe(whole.choices[0]!.text);
    expect(last.usage!.completion_tokens).toBe(whole.usage!.completion_tokens);
    // The chunks' logprobs, joined, are the whole completion's: text_offset counts from the completion's start.
    const pieces = chunks.map((c) => c.choices[0]!.logprobs!);
    expect(pieces.flatMap((lp) => lp.tokens!)).toEqual(whole.choices[0]!.logprobs!.tokens);
    expect(pieces.flatMap((lp) => lp.text_offset!)).toEqual(whole.choices[0]!.logprobs!.text_offset);
    const lps = chunks.flatMap((c) => c.choices[0]!.logprobs!.token_logprobs!);
    lps.forEach((x, i) => expect(Math.abs(x - whole.choices[0]!.logprobs!.token_logprobs![i]!), `token ${i}`).toBeLessThan(1e-5));
  });

  it('finish_reason length when max_tokens runs out before the JSON closes', async () => {
    const r = await engine.completions.create({ prompt: '', max_tokens: 4, seed: 1, response_format: petFormat });
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage.completion_tokens).toBe(4);
    expect(() => JSON.parse(r.choices[0]!.text)).toThrow();
  });

  it('a malformed response_format fails create() itself, streaming or not, naming the option', async () => {
    for (const stream of [false, true]) {
      const bad = engine.completions.create({ prompt: '', stream, response_format: { type: 'json_schema' } as unknown as ResponseFormat });
      await expect(bad).rejects.toThrow(InvalidArgumentError);
      await expect(engine.completions.create({ prompt: '', stream, response_format: { type: 'xml' } as unknown as ResponseFormat })).rejects.toThrow(/response_format/);
    }
  });

  it('chat.completions with response_format over a byte-level BPE tokenizer (random Qwen2-style model): whole and streamed alike', async () => {
    const { json, config } = byteLevelTokenizer();
    const tok = parseTokenizer(new TextEncoder().encode(JSON.stringify(json)), TINY_QWEN2.vocabSize, { config, eosTokenIds: [276] });
    const chat = assembleEngine(TINY_QWEN2, 1, new ReferenceBackend({ config: TINY_QWEN2, weights: randomWeights(TINY_QWEN2, 12, 3) }, { maxRows: 8 }), tok, async () => [], async () => {}, async () => {}, 'tiny-qwen2');
    const format = fromOpenAiFormat({ type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false } } });
    const p = { messages: [{ role: 'user', content: 'JSON 🙂?' }], ...fromOpenAiChatParams({ max_tokens: 30, temperature: 0, response_format: format }) };
    const whole = asOpenAiChat(await chat.chat.completions.create({ ...p, stream: false }));
    expect(whole.choices[0]!.finish_reason).toBe('stop');
    expect(JSON.parse(whole.choices[0]!.message.content!)).toEqual({ ok: expect.any(Boolean) });
    const pieces: string[] = [];
    for await (const c of await chat.chat.completions.create({ ...p, stream: true })) pieces.push(asOpenAiChatChunk(c).choices[0]!.delta.content ?? '');
    expect(pieces.join('')).toBe(whole.choices[0]!.message.content);
    await chat.dispose();
  });
});
