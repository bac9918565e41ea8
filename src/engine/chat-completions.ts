/**
 * `engine.chat.completions.create`: the OpenAI chat completions shape. The messages are rendered
 * by the model's chat template (tokenizer_config.json) and generated from as tokens, so the
 * template's own BOS and special tokens are kept exactly. With `stream: true` it resolves to an
 * async iterable of `chat.completion.chunk`s whose `delta`s carry the text.
 */
import type { ChatMessage } from '../model/tokenizer/hf-tokenizer.js';
import { InvalidArgumentError } from '../errors.js';
import { samplingOptions, tokenString, usageOf, type OpenAiSamplingParams, type OpenAiUsage } from './sampling-openai.js';
import type { ChunkLogprobs, FinishReason, GenerateChunk, GenerateOptions, TokenLogprob } from './types.js';

export type { ChatMessage };

export interface ChatCompletionParams extends OpenAiSamplingParams {
  messages: ChatMessage[];
  max_tokens?: number;
  /** Log-probability of each chosen token (see `GenerateOptions.logprobs`). */
  logprobs?: boolean;
  /** With `logprobs`: that many of the most likely tokens at each position, 0..20. */
  top_logprobs?: number;
  stream?: boolean;
}

/** One alternative at a position (OpenAI's `TopLogprob`). */
export interface ChatTopLogprob {
  token: string;
  /** The token's UTF-8 bytes (its text may be part of a character). */
  bytes: number[];
  logprob: number;
}

/** A chosen token (OpenAI's `ChatCompletionTokenLogprob`). */
export interface ChatTokenLogprob extends ChatTopLogprob {
  top_logprobs: ChatTopLogprob[];
}

/** A choice's `logprobs`: one entry per token of its content (a chunk's: of its delta). */
export interface ChatChoiceLogprobs {
  content: ChatTokenLogprob[] | null;
  refusal: null;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  /** `refusal` is always null (OpenAI's field; nothing here refuses). */
  choices: { index: number; message: { role: 'assistant'; content: string; refusal: null }; logprobs: ChatChoiceLogprobs | null; finish_reason: FinishReason }[];
  usage: OpenAiUsage;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: { index: number; delta: { role?: 'assistant'; content?: string }; logprobs: ChatChoiceLogprobs | null; finish_reason: FinishReason | null }[];
  /** On the last chunk only. */
  usage?: ChatCompletion['usage'];
}

export interface ChatCompletions {
  create(params: ChatCompletionParams & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>>;
  create(params: ChatCompletionParams & { stream?: false }): Promise<ChatCompletion>;
  create(params: ChatCompletionParams): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>>;
}

let counter = 0;

const alternative = (t: TokenLogprob): ChatTopLogprob => ({ token: tokenString(t.bytes), bytes: t.bytes, logprob: t.logprob });
const entry = (c: ChunkLogprobs): ChatTokenLogprob => ({ ...alternative(c), top_logprobs: c.top.map(alternative) });

export function createChatCompletions(
  encodeChat: (messages: readonly ChatMessage[]) => number[],
  generateTokens: (tokens: number[], opts: GenerateOptions) => AsyncIterable<GenerateChunk>,
  model: string,
): ChatCompletions {
  function start(p: ChatCompletionParams) {
    if (p.top_logprobs !== undefined && !p.logprobs) {
      throw new InvalidArgumentError(`top_logprobs (${p.top_logprobs}) needs logprobs: true`, 'Pass logprobs: true with top_logprobs, as OpenAI requires');
    }
    // Rendering happens before anything is queued, so a bad template fails the create() call.
    const tokens = encodeChat(p.messages);
    const opts: GenerateOptions = { ...samplingOptions(p, { logprobs: p.logprobs, topLogprobs: p.top_logprobs }), maxTokens: p.max_tokens ?? 256 };
    const head = { id: `chatcmpl-${Date.now().toString(36)}-${++counter}`, created: Math.floor(Date.now() / 1000), model };
    return { chunks: generateTokens(tokens, opts), head, logprobs: p.logprobs ? [] as ChatTokenLogprob[] : undefined };
  }
  /** The logprobs collected since the last call, emptied. */
  const take = (lp: ChatTokenLogprob[] | undefined): ChatChoiceLogprobs | null => (lp ? { content: lp.splice(0), refusal: null } : null);
  async function* stream({ chunks, head, logprobs }: ReturnType<typeof start>): AsyncGenerator<ChatCompletionChunk> {
    const object = 'chat.completion.chunk' as const;
    yield { ...head, object, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] };
    for await (const c of chunks) {
      if (c.logprobs) logprobs?.push(entry(c.logprobs));
      // A token without text yet (part of a character, or held back by a stop string) rides on the next chunk.
      if (c.done) {
        yield { ...head, object, choices: [{ index: 0, delta: c.text ? { content: c.text } : {}, logprobs: take(logprobs), finish_reason: c.stats!.finishReason }], usage: usageOf(c) };
      } else if (c.text) {
        yield { ...head, object, choices: [{ index: 0, delta: { content: c.text }, logprobs: take(logprobs), finish_reason: null }] };
      }
    }
  }
  async function whole({ chunks, head, logprobs }: ReturnType<typeof start>): Promise<ChatCompletion> {
    let text = '';
    for await (const c of chunks) {
      if (c.logprobs) logprobs?.push(entry(c.logprobs));
      text += c.text;
      if (c.done) {
        return { ...head, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: take(logprobs), finish_reason: c.stats!.finishReason }], usage: usageOf(c) };
      }
    }
    throw new Error('generation ended without a final chunk');
  }
  return {
    create: (async (p: ChatCompletionParams) => {
      const run = start(p);
      return p.stream ? stream(run) : whole(run);
    }) as ChatCompletions['create'],
  };
}
