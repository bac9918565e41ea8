/**
 * `engine.chat.completions.create`: the OpenAI chat completions shape. The messages are rendered
 * by the model's chat template (tokenizer_config.json) and generated from as tokens, so the
 * template's own BOS and special tokens are kept exactly. With `stream: true` it resolves to an
 * async iterable of `chat.completion.chunk`s whose `delta`s carry the text.
 */
import type { ChatMessage } from '../model/tokenizer/hf-tokenizer.js';
import type { FinishReason, GenerateChunk, GenerateOptions } from './types.js';

export type { ChatMessage };

export interface ChatCompletionParams {
  messages: ChatMessage[];
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  seed?: number;
  stop?: string | string[];
  stream?: boolean;
  signal?: AbortSignal;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: { index: number; message: { role: 'assistant'; content: string }; logprobs: null; finish_reason: FinishReason }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: { index: number; delta: { role?: 'assistant'; content?: string }; logprobs: null; finish_reason: FinishReason | null }[];
  /** On the last chunk only. */
  usage?: ChatCompletion['usage'];
}

export interface ChatCompletions {
  create(params: ChatCompletionParams & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>>;
  create(params: ChatCompletionParams & { stream?: false }): Promise<ChatCompletion>;
  create(params: ChatCompletionParams): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>>;
}

let counter = 0;

export function createChatCompletions(
  encodeChat: (messages: readonly ChatMessage[]) => number[],
  generateTokens: (tokens: number[], opts: GenerateOptions) => AsyncIterable<GenerateChunk>,
  model: string,
): ChatCompletions {
  function start(p: ChatCompletionParams) {
    // Rendering happens before anything is queued, so a bad template fails the create() call.
    const tokens = encodeChat(p.messages);
    const opts: GenerateOptions = {
      maxTokens: p.max_tokens ?? 256,
      temperature: p.temperature,
      topP: p.top_p,
      seed: p.seed,
      stop: p.stop === undefined ? undefined : Array.isArray(p.stop) ? p.stop : [p.stop],
      signal: p.signal,
    };
    const head = { id: `chatcmpl-${Date.now().toString(36)}-${++counter}`, created: Math.floor(Date.now() / 1000), model };
    return { chunks: generateTokens(tokens, opts), head };
  }
  const usageOf = (c: GenerateChunk) => {
    const s = c.stats!;
    return { prompt_tokens: s.promptTokens, completion_tokens: s.generatedTokens, total_tokens: s.promptTokens + s.generatedTokens };
  };
  async function* stream(chunks: AsyncIterable<GenerateChunk>, head: { id: string; created: number; model: string }): AsyncGenerator<ChatCompletionChunk> {
    const object = 'chat.completion.chunk' as const;
    yield { ...head, object, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] };
    for await (const c of chunks) {
      if (c.done) {
        yield { ...head, object, choices: [{ index: 0, delta: c.text ? { content: c.text } : {}, logprobs: null, finish_reason: c.stats!.finishReason }], usage: usageOf(c) };
      } else if (c.text) {
        yield { ...head, object, choices: [{ index: 0, delta: { content: c.text }, logprobs: null, finish_reason: null }] };
      }
    }
  }
  async function whole(chunks: AsyncIterable<GenerateChunk>, head: { id: string; created: number; model: string }): Promise<ChatCompletion> {
    let text = '';
    for await (const c of chunks) {
      text += c.text;
      if (c.done) {
        return { ...head, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: c.stats!.finishReason }], usage: usageOf(c) };
      }
    }
    throw new Error('generation ended without a final chunk');
  }
  return {
    create: (async (p: ChatCompletionParams) => {
      const { chunks, head } = start(p);
      return p.stream ? stream(chunks, head) : whole(chunks, head);
    }) as ChatCompletions['create'],
  };
}
