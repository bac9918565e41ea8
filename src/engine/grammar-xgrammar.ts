/**
 * Loading @mlc-ai/web-xgrammar (WebLLM's grammar engine, C++ compiled to WebAssembly with the
 * module inlined, so it needs no network) and handing it a vocabulary as bytes.
 */
import type * as Xg from '@mlc-ai/web-xgrammar';
import { GrammarError } from '../errors.js';

export type XGrammar = typeof Xg;

let loading: Promise<XGrammar> | undefined;

/** The library, loaded once on first use (it is ~1 MB, so requests without a grammar never pay for it). */
export function loadXGrammar(): Promise<XGrammar> {
  loading ??= importXGrammar().catch((e: unknown) => {
    loading = undefined;
    throw new GrammarError(`the grammar library (@mlc-ai/web-xgrammar) did not load: ${e instanceof Error ? e.message : String(e)}`);
  });
  return loading;
}

type Globals = { xgrammar?: XGrammar; require?: unknown; __filename?: unknown; process?: { getBuiltinModule?(id: string): unknown } };

async function importXGrammar(): Promise<XGrammar> {
  const g = globalThis as Globals;
  // The package is a UMD bundle marked as an ES module: under Node's ESM loader its Emscripten
  // glue reaches for CommonJS' `require` and `__filename`, so they are lent for the load only.
  const lend = typeof document === 'undefined' && typeof location === 'undefined' && g.require === undefined && g.process?.getBuiltinModule !== undefined;
  if (lend) {
    const { createRequire } = g.process!.getBuiltinModule!('module') as { createRequire(url: string): unknown };
    g.require = createRequire(import.meta.url);
    g.__filename = '/xgrammar/index.js';
  }
  try {
    const mod = (await import('@mlc-ai/web-xgrammar')) as Partial<XGrammar> & { default?: Partial<XGrammar> };
    // A bundler may turn the UMD into a module with exports; run as-is it sets `globalThis.xgrammar`.
    const xg = [mod, mod.default, g.xgrammar].find((m): m is XGrammar => typeof m?.GrammarCompiler?.createGrammarCompiler === 'function');
    if (!xg) throw new Error('the module exposes no GrammarCompiler');
    // The WebAssembly instance starts on the first call: make it happen while the shims are there.
    (await xg.Grammar.builtinJSONGrammar()).dispose();
    return xg;
  } finally {
    if (lend) {
      delete g.require;
      delete g.__filename;
    }
  }
}

/** GPT-2's byte-to-character table: xgrammar's "byte_level" vocabularies spell each byte as one of these. */
const BYTE_CHARS: readonly string[] = (() => {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let shifted = 0;
  return Array.from({ length: 256 }, (_, b) => String.fromCharCode(printable(b) ? b : 256 + shifted++));
})();

/**
 * Each token's bytes spelled byte-level. Every tokenizer here (llama2.c's SentencePiece with
 * `<0xXX>` byte tokens, Hugging Face and GGUF BPE) already yields raw bytes per token, partial
 * UTF-8 characters included; an empty token (a special or control token, or a stop token) can
 * never be sampled under a grammar.
 */
export function byteLevelVocab(vocabSize: number, bytesOf: (token: number) => Uint8Array): string[] {
  const out = new Array<string>(vocabSize);
  for (let t = 0; t < vocabSize; t++) {
    let s = '';
    for (const b of bytesOf(t)) s += BYTE_CHARS[b]!;
    out[t] = s;
  }
  return out;
}
