import { test, expect } from './fixtures.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Harness } from '../src/cli/browser.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import type { Completion, CompletionChunk } from '../src/engine/completions.js';
import type { ChatCompletion, ChatCompletionChunk } from '../src/engine/chat-completions.js';
import type { GenerateChunk, GenerateOptions } from '../src/engine/types.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import { HfTokenizer } from '../src/model/tokenizer/hf-tokenizer.js';
import * as R from '../src/model/reference.js';
import { TokenSampler } from '../src/engine/sampling.js';
import { resolveSampling } from '../src/engine/sampling-options.js';
import { exportHf } from '../test-support/model/hf-export.js';
import { byteLevelTokenizer, randomWeights, TINY_QWEN2 } from '../test-support/model/hf-testing.js';
import { modelsDir, readArrayBuffer } from '../test-support/fixtures/paths.js';
import { generateChunks, ok } from './page-api.js';

// The OpenAI shapes, logprobs and samplers through the real engine in Chromium (the unit tests
// run them over the CPU oracle); the oracle says what the logprobs and tokens must be.
const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
const tok512 = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
const greedy = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[] };
const base: PageGenerateOptions = { model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', devices: 'gpu', tp: 1, prompt: '', maxTokens: 0, temperature: 0, topP: 0.9, seed: 1, cache: false };

const completions = (h: Harness, p: Parameters<Window['tp']['api']['completions']>[1], o = base) =>
  h.page.evaluate(([o, p]) => window.tp.api.completions(o, p), [o, p] as const);
const generate = (h: Harness, prompt: string, opts: Omit<GenerateOptions, 'signal'>, o = base) => generateChunks(h, o, prompt, opts);

/** The oracle's logits before each of `tokens` after `prompt`. */
function oracleLogits(model: R.ReferenceModel, prompt: number[], tokens: number[]): Float32Array[] {
  const s = R.createRunState(model.config);
  let logits = new Float32Array(0);
  prompt.forEach((t, pos) => (logits = R.forward(model, s, t, pos).slice()));
  return tokens.map((t, i) => {
    const before = logits;
    logits = R.forward(model, s, t, prompt.length + i).slice();
    return before;
  });
}

function logSoftmax(logits: Float32Array): number[] {
  const m = Math.max(...logits);
  const z = m + Math.log(logits.reduce((a, x) => a + Math.exp(x - m), 0));
  return Array.from(logits, (x) => x - z);
}

/** Each chunk's logprobs (sampled token and top ones) against the oracle's log-softmax, to 1e-4. */
function expectOracleLogprobs(model: R.ReferenceModel, prompt: number[], chunks: GenerateChunk[], top: number): void {
  const tokens = chunks.map((c) => c.token);
  oracleLogits(model, prompt, tokens).forEach((l, i) => {
    const want = logSoftmax(l);
    const lp = chunks[i]!.logprobs!;
    expect(Math.abs(lp.logprob - want[lp.token]!), `token ${i}`).toBeLessThan(1e-4);
    const order = want.map((_, id) => id).sort((a, b) => want[b]! - want[a]!).slice(0, top);
    expect(lp.top.map((t) => t.token), `top ids at ${i}`).toEqual(order);
    for (const t of lp.top) expect(Math.abs(t.logprob - want[t.token]!), `top ${t.token} at ${i}`).toBeLessThan(1e-4);
  });
}

test.describe.configure({ mode: 'serial' });
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-api-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('completions with logprobs: 5 on stories260K: the oracle\'s log-softmax to 1e-4, OpenAI\'s legacy shape, whole and streamed alike', async ({ harness }) => {
  const prompt = 'Once upon a time';
  const g = await generate(harness, prompt, { maxTokens: 8, temperature: 0, topLogprobs: 5 });
  const chunks = g.chunks.filter((c) => !c.done);
  expectOracleLogprobs(stories, g.promptTokens, chunks, 5);

  const whole = ok(await completions(harness, { prompt, max_tokens: 8, temperature: 0, logprobs: 5 })) as Completion;
  expect(whole.object).toBe('text_completion');
  const choice = whole.choices[0]!;
  expect(choice.finish_reason).toBe('length');
  // The generate call left the prompt's KV: all but its last token (which must run for logits) are reused.
  expect(whole.usage).toEqual({ prompt_tokens: g.promptTokens.length, completion_tokens: 8, total_tokens: g.promptTokens.length + 8, prompt_tokens_details: { cached_tokens: g.promptTokens.length - 1 } });
  expect(choice.text).toBe(chunks.map((c) => c.text).join(''));
  const lp = choice.logprobs!;
  expect(lp.tokens.join('')).toBe(choice.text);
  // This request reuses the generate call's KV for the prompt, so its last prompt row runs in
  // a batch of 1 instead of 5: the GPU's sums, and the logits' last bits, may differ.
  const close = (a: number[], b: number[]) => a.forEach((x, i) => expect(Math.abs(x - b[i]!)).toBeLessThan(1e-5));
  close(lp.token_logprobs, chunks.map((c) => c.logprobs!.logprob));
  lp.top_logprobs.forEach((t, i) => close(Object.values(t), chunks[i]!.logprobs!.top.map((x) => x.logprob)));
  lp.text_offset.forEach((o, i) => expect(choice.text.slice(o, o + lp.tokens[i]!.length)).toBe(lp.tokens[i]));

  const streamed = ok(await completions(harness, { prompt, max_tokens: 8, temperature: 0, logprobs: 5, stream: true })) as CompletionChunk[];
  expect(streamed.map((c) => c.choices[0]!.text).join('')).toBe(choice.text);
  expect(streamed.flatMap((c) => c.choices[0]!.logprobs!.token_logprobs)).toEqual(lp.token_logprobs);
  expect(streamed.at(-1)!.choices[0]!.finish_reason).toBe('length');
  expect(streamed.at(-1)!.usage).toEqual(whole.usage);
});

test('a stop string across token boundaries ends the completion before it, with finish_reason stop and the tokens counted', async ({ harness }) => {
  const stop = 'girl nam';
  // The fixture's greedy tokens up to the one that completes the stop string.
  let n = 0;
  while (!tok512.decodeText(greedy.tokens.slice(1, n + 1)).includes(stop)) n++;
  const want = tok512.decodeText(greedy.tokens.slice(1, n + 1)).split(stop)[0]!;
  const whole = ok(await completions(harness, { prompt: '', max_tokens: 64, temperature: 0, stop })) as Completion;
  expect(whole.choices[0]!.text).toBe(want);
  expect(whole.choices[0]!.finish_reason).toBe('stop');
  expect(whole.usage.completion_tokens).toBe(n);
  const streamed = ok(await completions(harness, { prompt: '', max_tokens: 64, temperature: 0, stop: [stop, 'never'], stream: true })) as CompletionChunk[];
  expect(streamed.map((c) => c.choices[0]!.text).join('')).toBe(want);
  expect(streamed.at(-1)!.choices[0]!.finish_reason).toBe('stop');
  expect(streamed.at(-1)!.usage).toEqual(whole.usage);
});

test('every sampler, seeded, through the real engine: the chain over the oracle\'s logits picks the same tokens; OpenAI names give the same text', async ({ harness }) => {
  const opts: GenerateOptions = {
    seed: 5, temperature: 0.8, topP: 0.95, topK: 40, minP: 0.05, repetitionPenalty: 1.3, presencePenalty: 0.3,
    frequencyPenalty: 0.3, penaltyLastN: 32, logitBias: { 13: -100, 400: 2 }, maxTokens: 16, ignoreEos: true, topLogprobs: 2,
  };
  const prompt = 'Lily and Ben';
  const g = await generate(harness, prompt, opts);
  const chunks = g.chunks.filter((c) => !c.done);
  const sampler = new TokenSampler(512, resolveSampling(opts, 512));
  g.promptTokens.forEach((t) => sampler.accept(t));
  const want = oracleLogits(stories, g.promptTokens, chunks.map((c) => c.token)).map((l) => {
    const t = sampler.sample(l);
    sampler.accept(t);
    return t;
  });
  expect(chunks.map((c) => c.token)).toEqual(want);
  expectOracleLogprobs(stories, g.promptTokens, chunks, 2);
  const viaOpenAi = ok(await completions(harness, {
    prompt, max_tokens: 16, seed: 5, temperature: 0.8, top_p: 0.95, top_k: 40, min_p: 0.05, repeat_penalty: 1.3,
    presence_penalty: 0.3, frequency_penalty: 0.3, repeat_last_n: 32, logit_bias: { 13: -100, 400: 2 },
  })) as Completion;
  // The completion may stop early at EOS (no ignoreEos in OpenAI's shape): a prefix of the text.
  expect(chunks.map((c) => c.text).join('').startsWith(viaOpenAi.choices[0]!.text)).toBe(true);
  expect(viaOpenAi.choices[0]!.text.length).toBeGreaterThan(0);
  // A bad value is refused with its name and range.
  const bad = await completions(harness, { prompt, top_k: -1 });
  expect('error' in bad && bad.error).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('top_k') });
});

test('chat.completions with logprobs through a chat template (a random Qwen2-style HF model): the oracle\'s log-softmax, whole and streamed alike', async ({ harness }) => {
  const weights = randomWeights(TINY_QWEN2, 12, 3);
  const files = exportHf(TINY_QWEN2, weights, { eosTokenId: 276 });
  const t = byteLevelTokenizer();
  files.set('tokenizer.json', new TextEncoder().encode(JSON.stringify(t.json)));
  files.set('tokenizer_config.json', new TextEncoder().encode(JSON.stringify(t.config)));
  const hf = '/hf/api-qwen/resolve/main';
  for (const [file, bytes] of files) {
    writeFileSync(join(dir, file), bytes);
    harness.server.mountFile(`${hf}/${file}`, join(dir, file));
  }
  const o: PageGenerateOptions = { ...base, model: { hf }, tokenizer: undefined };
  const messages = [{ role: 'user', content: 'Say hello 世界 🙂' }];
  const p = { messages, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 3 };
  const whole = ok(await harness.page.evaluate(([o, p]) => window.tp.api.chat(o, p), [o, p] as const)) as ChatCompletion;
  expect(whole.object).toBe('chat.completion');
  expect(whole.choices[0]!.message.role).toBe('assistant');
  const content = whole.choices[0]!.logprobs!.content!;
  expect(content).toHaveLength(whole.usage.completion_tokens);
  const tok = new HfTokenizer(t.json, t.config);
  const prompt = tok.encode(tok.applyChatTemplate(messages), false);
  expect(whole.usage.prompt_tokens).toBe(prompt.length);
  const wantIds = oracleGreedyIds(prompt, content.length, weights);
  expect(whole.choices[0]!.message.content).toBe(tok.decode(wantIds));
  expect(new TextDecoder().decode(new Uint8Array(content.flatMap((c) => c.bytes)))).toBe(whole.choices[0]!.message.content);
  oracleLogits({ config: TINY_QWEN2, weights }, prompt, wantIds).forEach((l, i) => {
    const want = logSoftmax(l);
    const best = [...want.keys()].sort((a, b) => want[b]! - want[a]!);
    const c = content[i]!;
    expect(Math.abs(c.logprob - want[wantIds[i]!]!), `token ${i}`).toBeLessThan(1e-4);
    expect(c.top_logprobs).toHaveLength(3);
    c.top_logprobs.forEach((x, j) => expect(Math.abs(x.logprob - want[best[j]!]!), `top ${j} at ${i}`).toBeLessThan(1e-4));
  });
  const streamed = ok(await harness.page.evaluate(([o, p]) => window.tp.api.chat(o, { ...p, stream: true }), [o, p] as const)) as ChatCompletionChunk[];
  expect(streamed[0]!.choices[0]!.delta.role).toBe('assistant');
  expect(streamed.map((c) => c.choices[0]!.delta.content ?? '').join('')).toBe(whole.choices[0]!.message.content);
  // The stream reuses the first request's KV (its last prompt row runs alone): logits' last bits may differ.
  const streamedContent = streamed.slice(1).flatMap((c) => c.choices[0]!.logprobs!.content!);
  const shape = (c: typeof content) => c.map((t) => [t.token, t.bytes, t.top_logprobs.map((x) => [x.token, x.bytes])]);
  expect(shape(streamedContent)).toEqual(shape(content));
  streamedContent.forEach((t, i) => {
    expect(Math.abs(t.logprob - content[i]!.logprob)).toBeLessThan(1e-5);
    t.top_logprobs.forEach((x, j) => expect(Math.abs(x.logprob - content[i]!.top_logprobs[j]!.logprob)).toBeLessThan(1e-5));
  });
  // The streamed request reuses the whole one's KV for all but the prompt's last token.
  expect(streamed.at(-1)!.usage).toEqual({ ...whole.usage, prompt_tokens_details: { cached_tokens: whole.usage.prompt_tokens - 1 } });
  await harness.page.evaluate(() => window.tp.engine.disposeAll());
});

test('a maxContext above the model\'s seq_len is refused at createEngine, naming the limit', async ({ harness }) => {
  const r = await harness.page.evaluate(() => window.tp.engine.tryCreate({ model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', maxContext: 1024, cache: false }));
  expect('error' in r && r.error).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('exceeds the model\'s trained context of 512 positions') });
});

const turnsA = ['Once upon a time', ' Then the dog', ' The end. Next day', ' Lily said', ' So they'];
const turnsB = ['Tom had a red ball', ' He threw it', ' The cat', ' Mom said', ' They all'];

for (const [tp, conversations] of [[1, [turnsA]], [2, [turnsA, turnsB]]] as const) {
  test(`prefix KV reuse at TP ${tp}, ${conversations.length} chat(s) of 5 turns at once: the tokens of runs without reuse, each turn prefilling only its new tokens`, async ({ harness }) => {
    const o: PageGenerateOptions = { ...base, tp, maxBatch: 2 };
    const turns = (c: string[][], reuse: boolean) => harness.page.evaluate(([o, c, reuse]) => window.tp.api.chatTurns(o, c, 8, reuse), [o, c, reuse] as const);
    // Without reuse, one conversation at a time: the reference tokens.
    const alone = [];
    for (const c of conversations) alone.push(ok(await turns([[...c]], false)).turns[0]!);
    await harness.page.evaluate(() => window.tp.engine.disposeAll());
    const r = ok(await turns(conversations.map((c) => [...c]), true));
    expect(r.turns.map((c) => c.map((t) => t.tokens))).toEqual(alone.map((c) => c.map((t) => t.tokens)));
    let reused = 0;
    for (const c of r.turns) {
      c.forEach((t, i) => {
        // A turn's slot holds the last prompt and reply but the reply's last token (never fed).
        const want = i === 0 ? 0 : c[i - 1]!.prompt.length + c[i - 1]!.tokens.length - 1;
        expect(t.stats.cachedTokens, `turn ${i}`).toBe(want);
        reused += want;
      });
    }
    expect(r.stats.prefixCache).toEqual({ hits: 4 * conversations.length, reusedTokens: reused });
  });
}

/** The oracle's greedy ids after `prompt`. */
function oracleGreedyIds(prompt: number[], n: number, weights: R.ReferenceModel['weights']): number[] {
  const model = { config: TINY_QWEN2, weights };
  const s = R.createRunState(TINY_QWEN2);
  let logits = new Float32Array(0);
  prompt.forEach((t, pos) => (logits = R.forward(model, s, t, pos).slice()));
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    out.push(R.argmax(logits, TINY_QWEN2.vocabSize));
    logits = R.forward(model, s, out[i]!, prompt.length + i).slice();
  }
  return out;
}
