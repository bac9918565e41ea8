import { describe, it, expect, beforeAll } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadLlama2c, type Llama2cModel } from '../model/formats/llama2c.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { ReferenceBackend } from '../../test-support/engine/reference-backend.js';
import { assembleEngine, type Engine } from './engine.js';
import { PrefixCache } from './prefix-cache.js';
import type { StepRow } from './scheduler.js';
import type { GenerateChunk, GenerationStats } from './types.js';

let model: Llama2cModel;
let tokenizer: Tokenizer;

beforeAll(() => {
  model = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
  tokenizer = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
});

/** An oracle engine whose steps' rows are logged. */
function engine(slots: number, failAt = -1): { e: Engine; rows: StepRow[][] } {
  const backend = new ReferenceBackend({ config: model.config, weights: model.weights }, { maxSlots: slots, maxRows: 16 });
  const rows: StepRow[][] = [];
  const step = backend.step.bind(backend);
  backend.step = async (r, l) => {
    if (rows.length === failAt) {
      rows.push([]);
      throw new Error('injected step failure');
    }
    rows.push(r.map((x) => ({ ...x })));
    return step(r, l);
  };
  return { e: assembleEngine(model.config, 1, backend, tokenizer, async () => [], async () => {}), rows };
}

async function run(e: Engine, prompt: number[], cachePrompt: boolean): Promise<{ tokens: number[]; stats: GenerationStats }> {
  const chunks: GenerateChunk[] = [];
  for await (const c of e.generateTokens(prompt, { maxTokens: 8, temperature: 0, ignoreEos: true, cachePrompt })) chunks.push(c);
  return { tokens: chunks.filter((c) => !c.done).map((c) => c.token), stats: chunks.at(-1)!.stats! };
}

/** A 5-turn chat, each turn's prompt the previous prompt, its reply and the new text's tokens. */
async function chat(e: Engine, turns: string[], cachePrompt: boolean): Promise<{ prompt: number[]; tokens: number[]; stats: GenerationStats }[]> {
  const out = [];
  let prompt: number[] = [];
  for (const [i, text] of turns.entries()) {
    prompt = i === 0 ? tokenizer.encode(text, true, false) : [...prompt, ...out[i - 1]!.tokens, ...tokenizer.encode(text, false, false)];
    out.push({ prompt, ...(await run(e, prompt, cachePrompt)) });
  }
  return out;
}

const turnsA = ['Once upon a time', ' Then the dog', ' The end. Next day', ' Lily said', ' So they'];
const turnsB = ['Tom had a red ball', ' He threw it', ' The cat', ' Mom said', ' They all'];

describe('PrefixCache', () => {
  it('gives the free slot holding the longest prefix, at most all but the prompt\'s last token; else the least recently used', () => {
    const c = new PrefixCache(3);
    c.wrote([0, 1, 2, 3].map((t, i) => ({ token: t, position: i, slot: 0 })));
    c.wrote([0, 1, 9].map((t, i) => ({ token: t, position: i, slot: 1 })));
    expect(c.take([0, 1, 2, 3, 4], true)).toEqual({ slot: 0, reused: 4 });
    expect(c.take([0, 1, 9], true)).toEqual({ slot: 1, reused: 2 }); // the last token is fed again
    c.release(1);
    c.release(0);
    // No common prefix: the least recently released slot (2, never used), then 1.
    expect(c.take([7], true)).toEqual({ slot: 2, reused: 0 });
    expect(c.take([0, 1, 2, 3, 4], false)).toEqual({ slot: 1, reused: 0 });
    expect(c.stats).toEqual({ hits: 2, reusedTokens: 6 });
  });

  it('a later write truncates what a slot holds; clear forgets everything; a gap holds nothing', () => {
    const c = new PrefixCache(1);
    c.wrote([0, 1, 2, 3].map((t, i) => ({ token: t, position: i, slot: 0 })));
    c.wrote([{ token: 8, position: 2, slot: 0 }]);
    expect(c.take([0, 1, 8, 3, 5], true).reused).toBe(3);
    c.release(0);
    c.wrote([{ token: 4, position: 9, slot: 0 }]);
    expect(c.take([0, 1, 8], true).reused).toBe(0);
    c.release(0);
    c.wrote([0, 1].map((t, i) => ({ token: t, position: i, slot: 0 })));
    c.clear();
    expect(c.take([0, 1, 2], true).reused).toBe(0);
  });
});

describe('prefix KV reuse through generate (CPU oracle)', () => {
  it('a 5-turn chat gives the tokens of a run without reuse, each turn prefilling only its new tokens', async () => {
    const without = await chat(engine(2).e, turnsA, false);
    const { e, rows } = engine(2);
    const withReuse = await chat(e, turnsA, true);
    expect(withReuse.map((t) => t.tokens)).toEqual(without.map((t) => t.tokens));
    withReuse.forEach((t, i) => {
      // The slot holds the last prompt and reply, but not the reply's last token (never fed).
      const cached = i === 0 ? 0 : withReuse[i - 1]!.prompt.length + withReuse[i - 1]!.tokens.length - 1;
      expect(t.stats.cachedTokens, `turn ${i}`).toBe(cached);
      expect(without[i]!.stats.cachedTokens).toBe(0);
    });
    // Prefill rows fed (decode rows are one per step): turn i's new tokens, plus the reply's last.
    const prefillRows = rows.flat().length - withReuse.reduce((a, t) => a + t.tokens.length - 1, 0);
    expect(prefillRows).toBe(withReuse.reduce((a, t) => a + t.prompt.length - t.stats.cachedTokens, 0));
    expect((await e.stats()).prefixCache).toEqual({ hits: 4, reusedTokens: withReuse.reduce((a, t) => a + t.stats.cachedTokens, 0) });
    await e.resetStats();
    expect((await e.stats()).prefixCache).toEqual({ hits: 0, reusedTokens: 0 });
  });

  it('two chats at once, batched, each finds its own slot and its run-alone tokens', async () => {
    const alone = [await chat(engine(2).e, turnsA, false), await chat(engine(2).e, turnsB, false)];
    const { e } = engine(2);
    const together = await Promise.all([chat(e, turnsA, true), chat(e, turnsB, true)]);
    expect(together.map((c) => c.map((t) => t.tokens))).toEqual(alone.map((c) => c.map((t) => t.tokens)));
    for (const c of together) c.slice(1).forEach((t, i) => expect(t.stats.cachedTokens).toBe(c[i]!.prompt.length + c[i]!.tokens.length - 1));
  });

  it('a rewritten history reuses only the tokens before the change', async () => {
    const { e } = engine(1);
    const first = await run(e, tokenizer.encode('Once upon a time there was a dog', true, false), true);
    const edited = tokenizer.encode('Once upon a time there was a cat', true, false);
    const same = edited.findIndex((t, i) => t !== tokenizer.encode('Once upon a time there was a dog', true, false)[i]);
    const second = await run(e, edited, true);
    expect(second.stats.cachedTokens).toBe(same);
    expect(second.tokens).toEqual((await run(engine(1).e, edited, false)).tokens);
    expect(first.tokens).toHaveLength(8);
  });

  it('after a failed step nothing kept is trusted: the next request prefills everything', async () => {
    const prompt = tokenizer.encode('Once upon a time', true, false);
    const { e, rows } = engine(1, 12);
    const a = await run(e, prompt, true);
    const failed = await run(e, [...prompt, ...a.tokens], true).catch((err: unknown) => err);
    expect(String(failed)).toMatch(/injected step failure/);
    expect(rows).toHaveLength(13);
    const b = await run(e, [...prompt, ...a.tokens], true);
    expect(b.stats.cachedTokens).toBe(0);
    expect(b.tokens).toEqual((await run(engine(1).e, [...prompt, ...a.tokens], false)).tokens);
  });
});
