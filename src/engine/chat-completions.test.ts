import { describe, expect, it } from 'vitest';
import { byteLevelTokenizer, randomWeights, TINY_QWEN2 } from '../../test-support/model/hf-testing.js';
import { HfTokenizer } from '../model/tokenizer/hf-tokenizer.js';
import * as R from '../model/reference.js';
import { assembleEngine } from './engine.js';
import { ReferenceBackend } from '../../test-support/engine/reference-backend.js';
import { parseTokenizer } from './tokenizers.js';
import type { ChatCompletionChunk } from './chat-completions.js';
import { InvalidArgumentError, TokenizerFormatError } from '../errors.js';

const { json, config } = byteLevelTokenizer();
const weights = randomWeights(TINY_QWEN2, 12, 3);
const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: '世界 🙂?' }];

function engine(eos: number[] = []) {
  const tok = parseTokenizer(new TextEncoder().encode(JSON.stringify(json)), TINY_QWEN2.vocabSize, { config, eosTokenIds: eos });
  const backend = new ReferenceBackend({ config: TINY_QWEN2, weights }, { maxRows: 8 });
  return assembleEngine(TINY_QWEN2, 1, backend, tok, async () => [], async () => {}, async () => {}, 'tiny-qwen2');
}

/** The oracle's greedy tokens after `prompt`. */
function oracle(prompt: number[], n: number): number[] {
  const s = R.createRunState(TINY_QWEN2);
  const model = { config: TINY_QWEN2, weights };
  let logits = new Float32Array(0) as Float32Array;
  prompt.forEach((t, pos) => (logits = R.forward(model, s, t, pos)));
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    out.push(R.argmax(logits, TINY_QWEN2.vocabSize));
    logits = R.forward(model, s, out[i]!, prompt.length + i);
  }
  return out;
}

/** The oracle's logits before each of its first `n` greedy tokens after `prompt`. */
function oracleLogits(prompt: number[], n: number): Float32Array[] {
  const s = R.createRunState(TINY_QWEN2);
  const model = { config: TINY_QWEN2, weights };
  let logits = new Float32Array(0) as Float32Array;
  prompt.forEach((t, pos) => (logits = R.forward(model, s, t, pos).slice()));
  const out: Float32Array[] = [];
  for (let i = 0; i < n; i++) {
    out.push(logits);
    logits = R.forward(model, s, R.argmax(logits, TINY_QWEN2.vocabSize), prompt.length + i).slice();
  }
  return out;
}

function logSoftmax(logits: Float32Array, i: number): number {
  const m = Math.max(...logits);
  return logits[i]! - m - Math.log(logits.reduce((a, x) => a + Math.exp(x - m), 0));
}

describe('engine.chat.completions', () => {
  const tok = new HfTokenizer(json, config);
  const prompt = tok.encode(tok.applyChatTemplate(messages), false);

  it('renders the template, generates the oracle\'s tokens, and answers in the OpenAI shape', async () => {
    const e = engine();
    expect(e.encodeChat(messages)).toEqual(prompt);
    const r = await e.chat.completions.create({ messages, max_tokens: 12, temperature: 0 });
    expect(r.object).toBe('chat.completion');
    expect(r.model).toBe('tiny-qwen2');
    expect(r.choices[0]!.message.role).toBe('assistant');
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage).toEqual({ prompt_tokens: prompt.length, completion_tokens: 12, total_tokens: prompt.length + 12, prompt_tokens_details: { cached_tokens: 0 } });
    expect(r.choices[0]!.message.content).toBe(tok.decode(oracle(prompt, 12)));
    await e.dispose();
  });

  it('streams deltas that add up to the same text, a role first and usage last', async () => {
    const e = engine();
    const whole = await e.chat.completions.create({ messages, max_tokens: 12, temperature: 0 });
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of await e.chat.completions.create({ messages, max_tokens: 12, temperature: 0, stream: true })) chunks.push(c);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks.map((c) => c.choices[0]!.delta.content ?? '').join('')).toBe(whole.choices[0]!.message.content);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('length');
    expect(chunks.at(-1)!.usage?.completion_tokens).toBe(12);
    await e.dispose();
  });

  it('stops on the model\'s EOS ids', async () => {
    const first = oracle(prompt, 3);
    const e = engine([first[2]!]);
    const r = await e.chat.completions.create({ messages, max_tokens: 12, temperature: 0 });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.usage.completion_tokens).toBe(2);
    await e.dispose();
  });

  it('logprobs with top_logprobs 3: one entry per token, the oracle\'s log-softmax, bytes adding up to the content', async () => {
    const e = engine();
    const r = await e.chat.completions.create({ messages, max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 3 });
    const content = r.choices[0]!.logprobs!.content!;
    expect(r.choices[0]!.logprobs!.refusal).toBeNull();
    expect(content).toHaveLength(r.usage.completion_tokens);
    const logits = oracleLogits(prompt, 10);
    content.forEach((t, i) => {
      const id = R.argmax(logits[i]!, TINY_QWEN2.vocabSize);
      expect(Object.keys(t).sort()).toEqual(['bytes', 'logprob', 'token', 'top_logprobs']);
      expect(t.token).toBe(new TextDecoder().decode(new Uint8Array(t.bytes)));
      expect(Math.abs(t.logprob - logSoftmax(logits[i]!, id))).toBeLessThan(1e-6);
      expect(t.top_logprobs).toHaveLength(3);
      expect(t.top_logprobs[0]).toEqual({ token: t.token, bytes: t.bytes, logprob: t.logprob });
    });
    expect(new TextDecoder().decode(new Uint8Array(content.flatMap((t) => t.bytes)))).toBe(r.choices[0]!.message.content);
    // logprobs alone lists no alternatives; without it, logprobs is null.
    const bare = await e.chat.completions.create({ messages, max_tokens: 3, temperature: 0, logprobs: true });
    expect(bare.choices[0]!.logprobs!.content!.map((t) => t.top_logprobs)).toEqual([[], [], []]);
    expect((await e.chat.completions.create({ messages, max_tokens: 3, temperature: 0 })).choices[0]!.logprobs).toBeNull();
    await e.dispose();
  });

  it('streamed, the chunks\' logprobs add up to the whole reply\'s', async () => {
    const e = engine();
    const p = { messages, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 2 };
    const whole = await e.chat.completions.create(p);
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of await e.chat.completions.create({ ...p, stream: true })) chunks.push(c);
    expect(chunks[0]!.choices[0]!.logprobs).toBeNull(); // the role chunk
    expect(chunks.slice(1).flatMap((c) => c.choices[0]!.logprobs!.content!)).toEqual(whole.choices[0]!.logprobs!.content);
    await e.dispose();
  });

  it('samplers by their OpenAI names; top_logprobs without logprobs and bad values are InvalidArgumentErrors', async () => {
    const e = engine();
    const greedy = await e.chat.completions.create({ messages, max_tokens: 8, temperature: 0 });
    const k1 = await e.chat.completions.create({ messages, max_tokens: 8, temperature: 1.5, top_k: 1, seed: 4 });
    expect(k1.choices[0]!.message.content).toBe(greedy.choices[0]!.message.content);
    const first = oracle(prompt, 1)[0]!;
    const banned = await e.chat.completions.create({ messages, max_tokens: 1, temperature: 0, logit_bias: { [first]: -100 }, logprobs: true });
    expect(tok.encode(banned.choices[0]!.message.content, false)).not.toEqual([first]);
    await expect(e.chat.completions.create({ messages, top_logprobs: 2 })).rejects.toThrow(/top_logprobs \(2\) needs logprobs: true/);
    await expect(e.chat.completions.create({ messages, logprobs: true, top_logprobs: 21 })).rejects.toThrow(/must be at most 20/);
    await expect(e.chat.completions.create({ messages, frequency_penalty: 2.5 })).rejects.toThrow(InvalidArgumentError);
    await expect(e.chat.completions.create({ messages, min_p: -1, stream: true })).rejects.toThrow(/min_p\) must be in \[0, 1\]/);
    await e.dispose();
  });

  it('a tokenizer without a template is a TokenizerFormatError', async () => {
    const noTemplate = parseTokenizer(new TextEncoder().encode(JSON.stringify(json)), TINY_QWEN2.vocabSize, { config: {} });
    const e = assembleEngine(TINY_QWEN2, 1, new ReferenceBackend({ config: TINY_QWEN2, weights }), noTemplate, async () => [], async () => {});
    await expect(e.chat.completions.create({ messages })).rejects.toThrow(TokenizerFormatError);
    await e.dispose();
  });
});
