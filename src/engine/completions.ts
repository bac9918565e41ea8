/**
 * `engine.completions.create`: the OpenAI completions shape over `engine.generate`, for code
 * written against that API. With `stream: true` it resolves to an async iterable of chunks.
 */
import type { FinishReason, GenerateChunk, GenerateOptions } from './types.js';

export interface CompletionParams {
  prompt: string;
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  seed?: number;
  stop?: string | string[];
  stream?: boolean;
  signal?: AbortSignal;
}

export interface CompletionChoice {
  index: number;
  text: string;
  logprobs: null;
  finish_reason: FinishReason | null;
}

export interface Completion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: CompletionChoice[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** A streamed piece: the same shape, with this piece's text; `usage` only on the last. */
export type CompletionChunk = Omit<Completion, 'usage'> & { usage?: Completion['usage'] };

export interface Completions {
  create(params: CompletionParams & { stream: true }): Promise<AsyncIterable<CompletionChunk>>;
  create(params: CompletionParams & { stream?: false }): Promise<Completion>;
  create(params: CompletionParams): Promise<Completion | AsyncIterable<CompletionChunk>>;
}

let counter = 0;

export function createCompletions(
  generate: (prompt: string, opts: GenerateOptions) => AsyncIterable<GenerateChunk>,
  model: string,
): Completions {
  function start(p: CompletionParams) {
    const opts: GenerateOptions = {
      maxTokens: p.max_tokens ?? 16, // OpenAI's default
      temperature: p.temperature,
      topP: p.top_p,
      seed: p.seed,
      stop: p.stop === undefined ? undefined : Array.isArray(p.stop) ? p.stop : [p.stop],
      signal: p.signal,
    };
    const head = { id: `cmpl-${Date.now().toString(36)}-${++counter}`, object: 'text_completion' as const, created: Math.floor(Date.now() / 1000), model };
    return { chunks: generate(p.prompt, opts), head };
  }
  const usageOf = (c: GenerateChunk) => {
    const s = c.stats!;
    return { prompt_tokens: s.promptTokens, completion_tokens: s.generatedTokens, total_tokens: s.promptTokens + s.generatedTokens };
  };
  async function* stream(p: CompletionParams): AsyncGenerator<CompletionChunk> {
    const { chunks, head } = start(p);
    for await (const c of chunks) {
      if (c.done) {
        yield { ...head, choices: [{ index: 0, text: c.text, logprobs: null, finish_reason: c.stats!.finishReason }], usage: usageOf(c) };
      } else if (c.text) {
        yield { ...head, choices: [{ index: 0, text: c.text, logprobs: null, finish_reason: null }] };
      }
    }
  }
  async function whole(p: CompletionParams): Promise<Completion> {
    const { chunks, head } = start(p);
    let text = '';
    for await (const c of chunks) {
      text += c.text;
      if (c.done) return { ...head, choices: [{ index: 0, text, logprobs: null, finish_reason: c.stats!.finishReason }], usage: usageOf(c) };
    }
    throw new Error('generation ended without a final chunk');
  }
  return {
    create: (async (p: CompletionParams) => (p.stream ? stream(p) : whole(p))) as Completions['create'],
  };
}
