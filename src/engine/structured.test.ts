import { describe, it, expect, beforeAll } from 'vitest';
import { Ajv } from 'ajv';
import { stories260KOracle } from '../../test-support/engine/oracle-engine.js';
import type { Engine } from './engine.js';
import { resolveResponseFormat, StructuredOutput, type GrammarVocabulary, type JsonSchema, type ResponseFormat } from './structured.js';
import { ggufEngineTokenizer } from './tokenizers.js';
import { ggufBpeKv } from '../model/formats/gguf-write.js';
import { bpeFixture, SPECIALS, USER_TOKEN } from '../../test-support/model/gguf-bpe-fixture.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import { modelsDir } from '../../test-support/fixtures/paths.js';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { byteLevelVocab } from './grammar-xgrammar.js';
import type { GenerateChunk, GenerateOptions } from './types.js';
import { InvalidArgumentError } from '../errors.js';

let engine: Engine;

beforeAll(() => {
  engine = stories260KOracle().engine;
});

async function run(prompt: string, opts: GenerateOptions): Promise<{ text: string; tokens: number[]; last: GenerateChunk }> {
  let text = '';
  const tokens: number[] = [];
  for await (const c of engine.generate(prompt, opts)) {
    text += c.text;
    if (c.done) return { text, tokens, last: c };
    tokens.push(c.token);
  }
  throw new Error('no final chunk');
}

const person: JsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 8 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    mood: { enum: ['happy', 'sad'] },
    tags: { type: 'array', items: { type: 'boolean' }, maxItems: 2 },
  },
  required: ['name', 'age', 'mood'],
  additionalProperties: false,
};
const schemaFormat = (schema: JsonSchema): ResponseFormat => ({ type: 'json_schema', json_schema: { name: 'person', schema, strict: true } });

describe('resolveResponseFormat', () => {
  it('reduces each format to a schema, text to none', () => {
    expect(resolveResponseFormat(undefined)).toBeUndefined();
    expect(resolveResponseFormat({ type: 'text' })).toBeUndefined();
    expect(resolveResponseFormat({ type: 'json_object' })).toEqual({ schema: '{"type":"object"}', strict: false });
    expect(resolveResponseFormat(schemaFormat({ type: 'integer' }))).toEqual({ schema: '{"type":"integer"}', strict: true });
    expect(resolveResponseFormat({ type: 'json_schema', json_schema: { name: 'x', schema: {}, strict: false } })!.strict).toBe(false);
  });

  it('refuses a malformed format with an error naming the option', () => {
    const bad: unknown[] = [
      { type: 'yaml' },
      { type: 'json_schema' },
      { type: 'json_schema', json_schema: { schema: {} } },
      { type: 'json_schema', json_schema: { name: 'has space', schema: {} } },
      { type: 'json_schema', json_schema: { name: 'x', schema: [] } },
      { type: 'json_schema', json_schema: { name: 'x', schema: {}, strict: 'yes' } },
      'json',
    ];
    for (const f of bad) {
      expect(() => resolveResponseFormat(f as ResponseFormat), JSON.stringify(f)).toThrow(InvalidArgumentError);
      expect(() => resolveResponseFormat(f as ResponseFormat)).toThrow(/responseFormat \(response_format\)/);
    }
  });
});

describe('byteLevelVocab', () => {
  it('spells every byte as one distinct character, printable ASCII as itself', () => {
    const v = byteLevelVocab(256, (t) => Uint8Array.of(t));
    expect(new Set(v).size).toBe(256);
    expect(v.every((s) => s.length === 1)).toBe(true);
    expect(v[0x7b]).toBe('{');
    expect(v[0x20]).toBe('\u0120'); // GPT-2's Ġ
    expect(byteLevelVocab(1, () => new Uint8Array(0))).toEqual(['']);
  });
});

describe('structured output over the CPU oracle (stories260K, tok512 with byte tokens)', () => {
  const ajv = new Ajv();
  const validate = ajv.compile(person);

  it('json_schema: 20 seeded samples that stop all parse and validate; one cut short ends with length', async () => {
    const reasons: string[] = [];
    for (let seed = 1; seed <= 20; seed++) {
      const { text, last } = await run('Once upon a time', { responseFormat: schemaFormat(person), seed, temperature: 1, maxTokens: 96 });
      reasons.push(last.stats!.finishReason);
      if (last.stats!.finishReason === 'stop') {
        const value: unknown = JSON.parse(text);
        expect(validate(value), `${text}: ${ajv.errorsText(validate.errors)}`).toBe(true);
      }
    }
    // The schema bounds every value, so the grammar closes the object well within the budget.
    expect(reasons.filter((r) => r === 'stop').length).toBe(20);
    const cut = await run('Once upon a time', { responseFormat: schemaFormat(person), seed: 1, maxTokens: 3 });
    expect(cut.last.stats!.finishReason).toBe('length');
    expect(cut.tokens.length).toBe(3);
    expect(cut.text.startsWith('{')).toBe(true);
  });

  it('greedy under a grammar picks the most likely allowed token and stops only when complete', async () => {
    const { text, last } = await run('', { responseFormat: schemaFormat({ type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }), temperature: 0 });
    expect(last.stats!.finishReason).toBe('stop');
    expect(JSON.parse(text)).toEqual({ ok: expect.any(Boolean) });
  });

  it('json_object: a JSON object, whatever its members', async () => {
    for (let seed = 1; seed <= 3; seed++) {
      const { text, last } = await run('Lily', { responseFormat: { type: 'json_object' }, seed, maxTokens: 200 });
      if (last.stats!.finishReason === 'stop') expect(typeof JSON.parse(text)).toBe('object');
      else expect(text.startsWith('{')).toBe(true);
    }
  });

  it('a schema the compiler rejects is an InvalidArgumentError naming responseFormat; the engine goes on', async () => {
    await expect(run('', { responseFormat: schemaFormat({ type: 'foo' }) })).rejects.toThrow(InvalidArgumentError);
    await expect(run('', { responseFormat: schemaFormat({ type: 'string', minLength: 3, maxLength: 1 }) })).rejects.toThrow(/responseFormat \(response_format\)/);
    const { text, last } = await run('', { responseFormat: schemaFormat({ enum: ['yes', 'no'] }), temperature: 0 });
    expect(last.stats!.finishReason).toBe('stop');
    expect(['"yes"', '"no"']).toContain(text);
  });

  it('leaves unconstrained generation as it was', async () => {
    const a = await run('Once', { temperature: 0, maxTokens: 12 });
    const b = await run('Once', { temperature: 0, maxTokens: 12, responseFormat: { type: 'text' } });
    expect(b.tokens).toEqual(a.tokens);
  });
});

/** Greedy over seeded random logits under the grammar, as the scheduler drives it: the text and why it ended. */
async function walk(vocab: GrammarVocabulary, schema: JsonSchema, seed: number, max: number): Promise<{ text: string; done: boolean; tokens: number[] }> {
  const grammar = await new StructuredOutput(vocab).grammar({ schema: JSON.stringify(schema), strict: true });
  let x = seed;
  const rand = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const bytes: number[] = [];
  const tokens: number[] = [];
  try {
    for (let i = 0; i < max && !grammar.done; i++) {
      await grammar.prepare();
      const logits = Float32Array.from({ length: vocab.vocabSize + 3 }, rand);
      grammar.mask(logits);
      let best = 0;
      for (let t = 1; t < logits.length; t++) if (logits[t]! > logits[best]!) best = t;
      expect(best, 'padding rows past the vocabulary stay masked').toBeLessThan(vocab.vocabSize);
      expect(grammar.allows(best)).toBe(true);
      grammar.accept(best);
      tokens.push(best);
      if (!vocab.stopTokens.includes(best)) bytes.push(...vocab.bytesOf(best));
    }
    return { text: new TextDecoder().decode(new Uint8Array(bytes)), done: grammar.done, tokens };
  } finally {
    grammar.dispose();
  }
}

describe('the grammar over each tokenizer kind (random logits, so only the mask makes it JSON)', () => {
  const schema: JsonSchema = { type: 'object', properties: { w: { type: 'string', maxLength: 5 }, n: { type: 'integer', minimum: -9, maximum: 9 } }, required: ['w', 'n'], additionalProperties: false };
  const validate = new Ajv().compile(schema);

  it('llama2.c SentencePiece (tok512: byte fallback tokens, multi-byte characters split over them)', async () => {
    const t = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
    const vocab = { vocabSize: 512, stopTokens: [1, 2], bytesOf: (token: number) => t.decode(-1, token) };
    for (let seed = 1; seed <= 5; seed++) {
      const r = await walk(vocab, schema, seed, 200);
      expect(r.done, r.text).toBe(true);
      expect(vocab.stopTokens).toContain(r.tokens.at(-1));
      expect(validate(JSON.parse(r.text)), r.text).toBe(true);
    }
    // Inside a bounded string a raw control byte (<0x16>) is refused, a letter taken.
    const g = await new StructuredOutput(vocab).grammar({ schema: JSON.stringify(schema), strict: true });
    for (const c of '{"w":"') g.accept(3 + c.charCodeAt(0)); // <0xXX> byte tokens
    await g.prepare();
    expect(g.allows(3 + 0x16)).toBe(false);
    expect(g.allows(3 + 0x61)).toBe(true);
    g.dispose();
  });

  it('GGUF byte-level BPE (specials, a user-defined token and padding rows never sampled outside text)', async () => {
    const V = 320;
    const fx = bpeFixture(V);
    const meta = Object.fromEntries(Object.entries(ggufBpeKv(fx.gguf)).map(([k, v]) => [k, v.value]));
    const t = ggufEngineTokenizer(meta, V);
    const stopTokens = t.stopTokens!;
    expect(stopTokens.length).toBeGreaterThan(0);
    const vocab = { vocabSize: V, stopTokens, bytesOf: (token: number) => t.decodeBytes(-1, token) };
    const specials = SPECIALS.map((s) => fx.id(s)).filter((id) => !stopTokens.includes(id));
    for (let seed = 1; seed <= 5; seed++) {
      const r = await walk(vocab, schema, seed, 200);
      expect(r.done, r.text).toBe(true);
      expect(validate(JSON.parse(r.text)), r.text).toBe(true);
      expect(r.tokens.filter((id) => specials.includes(id) || id >= fx.id(USER_TOKEN) + 1)).toEqual([]);
    }
  });
});
