/**
 * The test page's OpenAI-shape entry points: `completions.create`, `chat.completions.create`
 * and `generate` with sampler and logprobs options, on the pool of loaded engines. A stream
 * comes back as its list of chunks; an error as `{error}` with its code.
 */
import { engineFor } from '../../src/cli/page/engine.js';
import { serializeError, type SerializedError } from '../../src/errors.js';
import type { PageGenerateOptions } from '../../src/cli/page/types.js';
import type { Completion, CompletionChunk, CompletionParams } from '../../src/engine/completions.js';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionParams } from '../../src/engine/chat-completions.js';
import type { EngineStats, GenerateChunk, GenerateOptions, GenerationStats } from '../../src/engine/types.js';

type Failed = { error: SerializedError };

async function settle<T>(run: () => Promise<T>): Promise<T | Failed> {
  try {
    return await run();
  } catch (e) {
    return { error: serializeError(e) };
  }
}

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const c of it) out.push(c);
  return out;
}

export function completions(o: PageGenerateOptions, p: Omit<CompletionParams, 'signal'>): Promise<Completion | CompletionChunk[] | Failed> {
  return settle(async () => {
    const { engine } = await engineFor(o);
    return p.stream ? all(await engine.completions.create({ ...p, stream: true })) : engine.completions.create({ ...p, stream: false });
  });
}

export function chat(o: PageGenerateOptions, p: Omit<ChatCompletionParams, 'signal'>): Promise<ChatCompletion | ChatCompletionChunk[] | Failed> {
  return settle(async () => {
    const { engine } = await engineFor(o);
    return p.stream ? all(await engine.chat.completions.create({ ...p, stream: true })) : engine.chat.completions.create({ ...p, stream: false });
  });
}

/** `generate`'s chunks for `prompt` (text, or token ids), with the prompt's ids. */
export function generateChunks(o: PageGenerateOptions, prompt: string, opts: Omit<GenerateOptions, 'signal'>): Promise<{ promptTokens: number[]; chunks: GenerateChunk[] } | Failed> {
  return settle(async () => {
    const { engine } = await engineFor(o);
    return { promptTokens: engine.encode(prompt), chunks: await all(engine.generate(prompt, opts)) };
  });
}

/** One chat turn: its prompt's ids, the reply's ids and the request's stats. */
export interface PageTurn {
  prompt: number[];
  tokens: number[];
  stats: GenerationStats;
}

/**
 * Chats with turns concatenated as tokens (llama2.c models have no template): each turn's
 * prompt is the last prompt, its reply and the turn's text. Conversations run at once; the
 * turns of one run in order. Greedy, `maxTokens` per reply, EOS ignored.
 */
export function chatTurns(o: PageGenerateOptions, conversations: string[][], maxTokens: number, cachePrompt: boolean): Promise<{ turns: PageTurn[][]; stats: EngineStats } | Failed> {
  return settle(async () => {
    const { engine } = await engineFor(o);
    await engine.resetStats();
    const talk = async (texts: string[]) => {
      const turns: PageTurn[] = [];
      for (const [i, text] of texts.entries()) {
        const last = turns[i - 1];
        const prompt = last ? [...last.prompt, ...last.tokens, ...engine.encode(text).slice(1)] : engine.encode(text);
        const chunks = await all(engine.generateTokens(prompt, { maxTokens, temperature: 0, ignoreEos: true, cachePrompt }));
        turns.push({ prompt, tokens: chunks.filter((c) => !c.done).map((c) => c.token), stats: chunks.at(-1)!.stats! });
      }
      return turns;
    };
    const turns = await Promise.all(conversations.map(talk));
    return { turns, stats: await engine.stats() };
  });
}
