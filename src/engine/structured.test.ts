import { describe, it, expect, beforeAll } from 'vitest';
import { Ajv } from 'ajv';
import { stories260KOracle } from '../../test-support/engine/oracle-engine.js';
import type { Engine } from './engine.js';
import { resolveResponseFormat, type JsonSchema, type ResponseFormat } from './structured.js';
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
