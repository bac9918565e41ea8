import { describe, expect, it } from 'vitest';
import { byteLevelTokenizer, randomWeights, TINY_QWEN2 } from '../../test-support/model/hf-testing.js';
import { HfTokenizer } from '../model/tokenizer/hf-tokenizer.js';
import * as R from '../model/reference.js';
import { assembleEngine } from './engine.js';
import { ReferenceBackend } from '../../test-support/engine/reference-backend.js';
import { parseTokenizer } from './tokenizers.js';
import type { ChatCompletionChunk } from './chat-completions.js';
import { TokenizerFormatError } from '../errors.js';

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
    expect(r.usage).toEqual({ prompt_tokens: prompt.length, completion_tokens: 12, total_tokens: prompt.length + 12 });
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

  it('a tokenizer without a template is a TokenizerFormatError', async () => {
    const noTemplate = parseTokenizer(new TextEncoder().encode(JSON.stringify(json)), TINY_QWEN2.vocabSize, { config: {} });
    const e = assembleEngine(TINY_QWEN2, 1, new ReferenceBackend({ config: TINY_QWEN2, weights }), noTemplate, async () => [], async () => {});
    await expect(e.chat.completions.create({ messages })).rejects.toThrow(TokenizerFormatError);
    await e.dispose();
  });
});
