/**
 * Structured output: `responseFormat` (OpenAI's `response_format`) as a grammar over the
 * model's whole vocabulary. Each step, the sequence's matcher says which tokens may come next;
 * the rest get a logit of -Infinity before any sampler (greedy included) sees them, and a stop
 * token is allowed only where the grammar accepts the output as complete.
 */
import { GrammarError, InvalidArgumentError } from '../errors.js';
import { byteLevelVocab, loadXGrammar, type XGrammar } from './grammar-xgrammar.js';
import type * as Xg from '@mlc-ai/web-xgrammar';

/** A JSON Schema (draft 2020-12 as xgrammar reads it), as a plain object. */
export type JsonSchema = { [key: string]: unknown };

/** OpenAI's `response_format`. */
export type ResponseFormat =
  | { type: 'text' }
  /** Any JSON object. */
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      json_schema: {
        name: string;
        description?: string;
        /** Absent: any JSON object, as with `json_object`. */
        schema?: JsonSchema;
        /** true (default here): no properties or items beyond the schema's; false: extra ones may appear where the schema allows them. */
        strict?: boolean | null;
      };
    };

/** What a request's grammar compiles from: the schema as JSON, and whether unlisted members are barred. */
export interface ResolvedFormat {
  schema: string;
  strict: boolean;
}

const OPTION = 'responseFormat (response_format)';
/** A character of a length-bounded string in xgrammar's grammar, and of a JSON string (see `grammar`). */
const BOUNDED_STRING_CHAR = String.raw`[^\"\\\r\n]`;
const JSON_STRING_CHAR = String.raw`[^\0-\x1f\"\\]`;

function invalid(what: string, remedy: string): never {
  throw new InvalidArgumentError(`${OPTION} ${what}`, remedy);
}

/**
 * `format` checked and reduced to a schema; undefined for plain text. Only its shape is
 * checked here; a schema the grammar compiler cannot read fails when the request starts.
 */
export function resolveResponseFormat(format: ResponseFormat | undefined): ResolvedFormat | undefined {
  if (format === undefined || format === null) return undefined;
  const f = format as { type?: unknown; json_schema?: unknown };
  if (typeof f !== 'object') invalid(`must be an object, got ${JSON.stringify(format)}`, "Pass { type: 'json_object' } or { type: 'json_schema', json_schema: { name, schema } }");
  if (f.type === 'text') return undefined;
  if (f.type === 'json_object') return { schema: '{"type":"object"}', strict: false };
  if (f.type !== 'json_schema') invalid(`.type must be 'text', 'json_object' or 'json_schema', got ${JSON.stringify(f.type)}`, "Pass { type: 'json_schema', json_schema: { name, schema } }");
  const js = f.json_schema as { name?: unknown; schema?: unknown; strict?: unknown } | undefined;
  if (typeof js !== 'object' || js === null) invalid('.json_schema must be an object { name, schema, strict? }', 'Pass the schema as json_schema.schema, with a name');
  if (typeof js.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(js.name)) {
    invalid(`.json_schema.name must be 1 to 64 letters, digits, _ or -, got ${JSON.stringify(js.name)}`, "Name the schema, e.g. name: 'answer'");
  }
  if (js.strict !== undefined && js.strict !== null && typeof js.strict !== 'boolean') invalid(`.json_schema.strict must be a boolean, got ${JSON.stringify(js.strict)}`, 'Pass true, false or leave it unset');
  const strict = js.strict !== false;
  if (js.schema === undefined) return { schema: '{"type":"object"}', strict };
  if (typeof js.schema !== 'object' || js.schema === null || Array.isArray(js.schema)) {
    invalid(`.json_schema.schema must be a JSON Schema object, got ${JSON.stringify(js.schema)}`, 'Pass e.g. { type: "object", properties: { ... }, required: [...] }');
  }
  let schema: string;
  try {
    schema = JSON.stringify(js.schema);
  } catch (e) {
    invalid(`.json_schema.schema is not serialisable as JSON (${(e as Error).message})`, 'Pass a plain JSON object');
  }
  return { schema, strict };
}

/** The vocabulary as the grammar library sees it: each token's bytes, its size, the stop tokens. */
export interface GrammarVocabulary {
  vocabSize: number;
  /** The token's bytes mid-sequence (not after BOS); empty for tokens that are never text. */
  bytesOf(token: number): Uint8Array;
  stopTokens: readonly number[];
}

interface Built { xg: XGrammar; info: Xg.TokenizerInfo; compiler: Xg.GrammarCompiler }

/**
 * One engine's grammar compiler: built on first use from its vocabulary, then compiling each
 * request's schema (the library caches repeated schemas).
 */
export class StructuredOutput {
  private compiler: Promise<Built> | undefined;

  constructor(private readonly vocab: GrammarVocabulary) {}

  /** A fresh matcher for one sequence under `format`. */
  async grammar(format: ResolvedFormat): Promise<TokenGrammar> {
    // A failed build is not kept: the next request tries again, as loadXGrammar does.
    const { xg, compiler } = await (this.compiler ??= this.build().catch((e: unknown) => {
      this.compiler = undefined;
      throw e;
    }));
    let ebnf: string;
    try {
      // One line with compact separators: the model cannot spend its tokens on whitespace.
      const g = await xg.Grammar.fromJSONSchema(format.schema, false, -1, [',', ':'], format.strict);
      ebnf = g.toString();
      g.dispose();
    } catch (e) {
      // The library aborts on schemas it cannot convert; its reason goes to the console.
      throw new InvalidArgumentError(
        `${OPTION} json_schema.schema is not a JSON Schema the grammar compiler accepts (${e instanceof Error ? e.message.split('\n')[0] : String(e)}; the console has its reason)`,
        'Fix the schema: a known "type", resolvable "$ref"s, consistent bounds (minLength ≤ maxLength, ...)',
      );
    }
    // xgrammar 0.1.27 spells a string with minLength / maxLength as runs of [^"\\\r\n], which lets
    // raw control characters (invalid in JSON) through; its unbounded strings exclude \0-\x1f.
    let compiled: Xg.CompiledGrammar;
    try {
      const fixed = await xg.Grammar.fromEBNF(ebnf.replaceAll(BOUNDED_STRING_CHAR, JSON_STRING_CHAR));
      try {
        compiled = await compiler.compileGrammar(fixed);
      } finally {
        fixed.dispose();
      }
    } catch (e) {
      throw new GrammarError(`${OPTION}: the grammar compiler failed on the schema's grammar (${e instanceof Error ? e.message.split('\n')[0] : String(e)})`);
    }
    try {
      return new TokenGrammar(await xg.GrammarMatcher.createGrammarMatcher(compiled, [...this.vocab.stopTokens]), this.vocab.vocabSize);
    } finally {
      compiled.dispose();
    }
  }

  private async build(): Promise<Built> {
    const xg = await loadXGrammar();
    const { vocabSize, stopTokens } = this.vocab;
    const stops = new Set(stopTokens);
    const encoded = byteLevelVocab(vocabSize, (t) => (stops.has(t) ? new Uint8Array(0) : this.vocab.bytesOf(t)));
    const info = await xg.TokenizerInfo.createTokenizerInfo(encoded, 'byte_level', false, vocabSize, [...stopTokens]);
    try {
      return { xg, info, compiler: await xg.GrammarCompiler.createGrammarCompiler(info) };
    } catch (e) {
      info.dispose();
      throw e;
    }
  }

  /** Frees the compiler and its vocabulary: the library's WebAssembly heap is shared by every engine on the page. */
  dispose(): void {
    const c = this.compiler;
    this.compiler = undefined;
    void c?.then((x) => {
      x.compiler.dispose();
      x.info.dispose();
    }, () => {});
  }
}

/**
 * One sequence's grammar state. Each step: `prepare()` (the allowed set at this point), then
 * `mask()` the logits, then `accept()` the sampled token.
 */
export class TokenGrammar {
  private bitmask: Int32Array | undefined;
  private disposed = false;

  constructor(private readonly matcher: Xg.GrammarMatcher, private readonly vocabSize: number) {}

  /** Computes which tokens may come next. */
  async prepare(): Promise<void> {
    const bits = await this.matcher.getNextTokenBitmask();
    if (!bits.some((w) => w !== 0)) {
      throw new GrammarError(
        `${OPTION}: no token of the vocabulary can continue the output here`,
        'Use a tokenizer that can spell every byte (byte-fallback or byte-level BPE), or loosen the schema',
      );
    }
    this.bitmask = bits;
  }

  /** Whether `token` may come next (after `prepare`). */
  allows(token: number): boolean {
    return ((this.bitmask![token >>> 5]! >>> (token & 31)) & 1) === 1;
  }

  /** Sets every disallowed token's logit to -Infinity, in place. */
  mask(logits: Float32Array): void {
    const words = this.bitmask!;
    const n = Math.min(this.vocabSize, logits.length);
    for (let w = 0; w < words.length; w++) {
      const bits = words[w]!;
      if (bits === -1) continue;
      const end = Math.min(n, (w + 1) * 32);
      for (let t = w * 32; t < end; t++) if (((bits >>> (t & 31)) & 1) === 0) logits[t] = -Infinity;
    }
    // Rows past the vocabulary (padding) are never text.
    logits.fill(-Infinity, n);
  }

  /** Advances the grammar by the sampled token (one `allows` said yes to). */
  accept(token: number): void {
    if (!this.matcher.acceptToken(token)) throw new GrammarError(`the grammar matcher refused token ${token}, which its own mask allowed`);
    this.bitmask = undefined;
  }

  /** True once a stop token ended the grammar. */
  get done(): boolean {
    return this.matcher.isTerminated();
  }

  /** Frees the matcher; a second call (engine disposal, then the sequence's release) does nothing. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.matcher.dispose();
  }
}
