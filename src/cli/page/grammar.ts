/**
 * What `webgpu-tp bench grammar` runs in the page: one greedy generation with or without a
 * `responseFormat` on a pooled engine, and a replay of a constrained run's tokens through a
 * fresh grammar, timing the mask of each token alone.
 */
import { engineFor } from './engine.js';
import { serializeError, type SerializedError } from '../../errors.js';
import { BOS, EOS, Tokenizer } from '../../model/tokenizer/tokenizer.js';
import { StructuredOutput, type JsonSchema } from '../../engine/structured.js';
import type { PageGenerateOptions } from './types.js';
import type { PageGrammarRun, PageMaskCost } from './grammar-types.js';

/** One greedy run of `o.prompt`, EOS ignored, under `schema` when given. */
export async function grammarRun(o: PageGenerateOptions, schema: JsonSchema | undefined): Promise<PageGrammarRun | { error: SerializedError }> {
  try {
    const { engine } = await engineFor(o);
    await engine.resetStats();
    const tokens: number[] = [];
    const responseFormat = schema && { type: 'json_schema' as const, json_schema: { name: 'bench', schema } };
    for await (const c of engine.generate(o.prompt, { maxTokens: o.maxTokens, temperature: 0, ignoreEos: true, responseFormat })) {
      if (!c.done) tokens.push(c.token);
      else {
        const stats = await engine.stats();
        return { tokens, finishReason: c.stats!.finishReason, decodeTokensPerS: c.stats!.decodeTokensPerS, schedulerMs: stats.schedulerMs };
      }
    }
    throw new Error('generation ended without a final chunk');
  } catch (e) {
    return { error: serializeError(e) };
  }
}

/** Per-token ms of a llama2.c tokenizer's grammar: compiling it, and prepare + mask for each of `tokens`, in order. */
export async function maskCost(tokenizerUrl: string, vocabSize: number, schema: JsonSchema, tokens: number[]): Promise<PageMaskCost | { error: SerializedError }> {
  try {
    const t = Tokenizer.parse(new Uint8Array(await (await fetch(tokenizerUrl)).arrayBuffer()), vocabSize);
    const structured = new StructuredOutput({ vocabSize, stopTokens: [BOS, EOS], bytesOf: (token) => t.decode(-1, token) });
    const t0 = performance.now();
    const grammar = await structured.grammar({ schema: JSON.stringify(schema), strict: true });
    const compileMs = performance.now() - t0;
    const logits = new Float32Array(vocabSize);
    const perTokenMs: number[] = [];
    for (const token of tokens) {
      const a = performance.now();
      await grammar.prepare();
      grammar.mask(logits);
      perTokenMs.push(performance.now() - a);
      grammar.accept(token);
    }
    grammar.dispose();
    return { compileMs, perTokenMs };
  } catch (e) {
    return { error: serializeError(e) };
  }
}
