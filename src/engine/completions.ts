/**
 * `engine.completions.create`: the OpenAI completions shape over `engine.generate`, for code
 * written against that API. With `stream: true` it resolves to an async iterable of chunks.
 */
import { InvalidArgumentError } from '../errors.js';
import { MAX_TOP_LOGPROBS } from './sampling-options.js';
import { samplingOptions, tokenString, usageOf, type OpenAiSamplingParams, type OpenAiUsage } from './sampling-openai.js';
import type { ChunkLogprobs, FinishReason, GenerateChunk, GenerateOptions } from './types.js';

export interface CompletionParams extends OpenAiSamplingParams {
  prompt: string;
  max_tokens?: number;
  /**
   * Log-probabilities of each chosen token and of the `logprobs` most likely ones at its
   * position (0..20; OpenAI's own API takes up to 5). See `GenerateOptions.logprobs`.
   */
  logprobs?: number | null;
  stream?: boolean;
}

/** OpenAI's legacy logprobs: one entry per token in each array. */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  /** The most likely tokens at each position, by their text. */
  top_logprobs: Record<string, number>[];
  /** Where each token's text starts in the completion's text (string index). */
  text_offset: number[];
}

export interface CompletionChoice {
  index: number;
  text: string;
  logprobs: CompletionLogprobs | null;
  finish_reason: FinishReason;
}

export interface Completion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: CompletionChoice[];
  usage: OpenAiUsage;
}

/** A streamed piece: the same shape, with this piece's text; `finish_reason` and `usage` only on the last. */
export type CompletionChunk = Omit<Completion, 'usage' | 'choices'> & {
  choices: (Omit<CompletionChoice, 'finish_reason'> & { finish_reason: FinishReason | null })[];
  usage?: Completion['usage'];
};

export interface Completions {
  create(params: CompletionParams & { stream: true }): Promise<AsyncIterable<CompletionChunk>>;
  create(params: CompletionParams & { stream?: false }): Promise<Completion>;
  create(params: CompletionParams): Promise<Completion | AsyncIterable<CompletionChunk>>;
}

let counter = 0;

/** Collects tokens' logprobs until they are handed out (every chunk, or the whole completion). */
class LegacyLogprobs {
  private lp: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };

  add(c: ChunkLogprobs, offset: number): void {
    this.lp.tokens.push(tokenString(c.bytes));
    this.lp.token_logprobs.push(c.logprob);
    this.lp.top_logprobs.push(Object.fromEntries(c.top.map((t) => [tokenString(t.bytes), t.logprob])));
    this.lp.text_offset.push(offset);
  }

  take(): CompletionLogprobs {
    const out = this.lp;
    this.lp = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
    return out;
  }
}

export function createCompletions(
  generate: (prompt: string, opts: GenerateOptions) => AsyncIterable<GenerateChunk>,
  model: string,
): Completions {
  function start(p: CompletionParams) {
    const top = p.logprobs ?? undefined;
    if (top !== undefined && !(Number.isInteger(top) && top >= 0 && top <= MAX_TOP_LOGPROBS)) {
      throw new InvalidArgumentError(`logprobs must be a whole number in 0..${MAX_TOP_LOGPROBS}, got ${top}`, 'Pass how many of the most likely tokens to list at each position, or leave it unset');
    }
    const opts: GenerateOptions = { ...samplingOptions(p, top === undefined ? {} : { topLogprobs: top }), maxTokens: p.max_tokens ?? 16 }; // OpenAI's default
    const head = { id: `cmpl-${Date.now().toString(36)}-${++counter}`, object: 'text_completion' as const, created: Math.floor(Date.now() / 1000), model };
    return { chunks: generate(p.prompt, opts), head, logprobs: top === undefined ? undefined : new LegacyLogprobs() };
  }
  async function* stream({ chunks, head, logprobs }: ReturnType<typeof start>): AsyncGenerator<CompletionChunk> {
    let offset = 0;
    for await (const c of chunks) {
      if (c.logprobs) logprobs?.add(c.logprobs, offset);
      offset += c.text.length;
      // A token without text yet (part of a character, or held back by a stop string) rides on the next chunk.
      if (c.done) {
        yield { ...head, choices: [{ index: 0, text: c.text, logprobs: logprobs?.take() ?? null, finish_reason: c.stats!.finishReason }], usage: usageOf(c) };
      } else if (c.text) {
        yield { ...head, choices: [{ index: 0, text: c.text, logprobs: logprobs?.take() ?? null, finish_reason: null }] };
      }
    }
  }
  async function whole({ chunks, head, logprobs }: ReturnType<typeof start>): Promise<Completion> {
    let text = '';
    for await (const c of chunks) {
      if (c.logprobs) logprobs?.add(c.logprobs, text.length);
      text += c.text;
      if (c.done) return { ...head, choices: [{ index: 0, text, logprobs: logprobs?.take() ?? null, finish_reason: c.stats!.finishReason }], usage: usageOf(c) };
    }
    throw new Error('generation ended without a final chunk');
  }
  return {
    create: (async (p: CompletionParams) => {
      // Parameters are checked before anything is queued, so a bad one fails the create() call.
      const run = start(p);
      return p.stream ? stream(run) : whole(run);
    }) as Completions['create'],
  };
}
