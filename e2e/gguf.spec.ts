import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import { repoRoot, type Harness } from '../src/cli/browser.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { loadGgufDequantized } from '../src/model/formats/gguf.js';
import { encodeGguf, type GgufQuant } from '../src/model/formats/gguf-write.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import { argmax, generate } from '../src/model/reference.js';
import { modelsDir, readArrayBuffer } from '../test-support/fixtures/paths.js';
import type { WebGpuTpError } from '../src/errors.js';

/**
 * GGUF: stories260K written as GGUF (F32, F16, Q8_0, Q4_0; tok512.bin in its metadata) and served
 * as one file; the engine, with the tokenizer from the file, against the oracle on the weights
 * the file holds, dequantised. Q8_0/Q4_0 group 32 and head size 8: TP 2 splits wo on a group
 * boundary, TP 4 cannot.
 */
const greedy = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[] };
const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-gguf-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

const STEPS = 48;
const files = new Map<string, { url: string; bytes: Uint8Array }>();

function serve(h: Harness, quant: GgufQuant): { url: string; bytes: Uint8Array } {
  let f = files.get(quant);
  if (!f) {
    const bytes = encodeGguf(stories, quant, tok);
    const path = join(dir, `stories260K-${quant}.gguf`);
    writeFileSync(path, bytes);
    f = { url: h.server.mountFile(`/files/gguf/stories260K-${quant}.gguf`, path), bytes };
    files.set(quant, f);
  }
  return f;
}

async function oracle(bytes: Uint8Array): Promise<number[]> {
  const { model } = await loadGgufDequantized(bytes);
  return generate(model, [1], STEPS, (l) => argmax(l, 512)).slice(1);
}

// Weight-only, as the f32 oracle on the dequantised weights computes: `auto` puts these on CPU ranks without a GPU, whose Q8_0/Q4_0 default is int8.
const base: Omit<PageGenerateOptions, 'model' | 'tp'> = { prompt: '', maxTokens: STEPS, temperature: 0, topP: 0.9, seed: 1, cache: false, int8Activations: false };

test.describe.configure({ mode: 'serial' });

// F16 (matrices kept f16, with the precision stats and memory) is e2e/f16.spec.ts's.
for (const quant of ['f32', 'q8_0'] as const) {
  test(`stories260K as GGUF ${quant.toUpperCase()} at TP 1 and 2, its own tokenizer: the oracle's greedy tokens on the dequantised weights`, async ({ harness }) => {
    const { url, bytes } = serve(harness, quant);
    const want = await oracle(bytes);
    if (quant === 'f32') expect(want).toEqual(greedy.tokens.slice(1, STEPS + 1));
    for (const tp of [1, 2]) {
      const r = await runGenerate(harness, { ...base, model: url, tp });
      expect(r.tp).toBe(tp);
      expect(r.prompt_tokens).toEqual([1]);
      expect(r.tokens, `TP ${tp}`).toEqual(want);
      // Q8_0's w2 (rows of 172, no whole blocks of 32) is llama-quantize's F16 fallback, kept f16
      for (const rs of r.stats.ranks) expect(rs.precision.weights).toBe(quant === 'f32' ? 'f32' : 'mixed');
    }
  });
}

test('a GGUF prompt is encoded by the tokenizer in the file as tok512.bin encodes it', async ({ harness }) => {
  const { url } = serve(harness, 'f32');
  const prompt = 'Once upon a time, Lily saw a big dog.';
  const r = await runGenerate(harness, { ...base, model: url, tp: 1, prompt, maxTokens: 8 });
  expect(r.prompt_tokens).toEqual(tok.encode(prompt, true, false));
  const { model } = await loadGgufDequantized(serve(harness, 'f32').bytes);
  expect(r.tokens).toEqual(generate(model, r.prompt_tokens, r.prompt_tokens.length + 7, (l) => argmax(l, 512)).slice(r.prompt_tokens.length));
});

test('`webgpu-tp generate --model FILE.gguf` needs no --tokenizer: llama2.c\'s greedy tokens at --tp 2', async ({ harness }) => {
  serve(harness, 'f32');
  const cli = resolve(repoRoot, 'dist/cli/main.js');
  const path = join(dir, 'stories260K-f32.gguf');
  // CPU ranks: the claim is the CLI's tokenizer from the file; this file on GPU ranks is the first test's
  const { stdout } = await promisify(execFile)('node', [cli, 'generate', '--devices', 'cpu', '--model', path, '--tp', '2', '--max-tokens', '32', '--temperature', '0', '--json', '--no-cache'], { timeout: 240_000 });
  const r = JSON.parse(stdout) as { tokens: number[]; tp: number };
  expect(r.tp).toBe(2);
  expect(r.tokens).toEqual(greedy.tokens.slice(1, 33));
});

test('GGUF Q8_0 at TP 4: wo\'s groups of 32 would straddle ranks (head size 8), a PlanError', async ({ harness }) => {
  const { url } = serve(harness, 'q8_0');
  const e = await runGenerate(harness, { ...base, model: url, tp: 4 }).then(() => undefined, (x: unknown) => x as WebGpuTpError);
  expect(e?.code).toBe('PLAN');
  expect(e?.message).toMatch(/inside a quantisation group of 32 \(head size 8\)/);
});

test('a GGUF with a tensor type the kernels do not read is a ModelFormatError naming the supported ones', async ({ harness }) => {
  const bytes = encodeGguf(stories, 'f32', tok);
  // token_embd.weight's info: its name, n_dims (4 bytes), two u64 dims, then the u32 type
  const name = new TextEncoder().encode('token_embd.weight');
  const at = Buffer.from(bytes).indexOf(Buffer.from(name)) + name.byteLength + 4 + 16;
  new DataView(bytes.buffer).setUint32(at, 11, true); // Q3_K
  const path = join(dir, 'q4k.gguf');
  writeFileSync(path, bytes);
  const url = harness.server.mountFile('/files/gguf/q4k.gguf', path);
  const e = await runGenerate(harness, { ...base, model: url, tp: 1 }).then(() => undefined, (x: unknown) => x as WebGpuTpError);
  expect(e?.code).toBe('MODEL_FORMAT');
  expect(e?.message).toMatch(/"token_embd\.weight" is Q3_K; webgpu-tp reads F32, F16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K tensors/);
});

test('stories260K as GGUF Q4_0 at TP 1 and 2: the oracle\'s greedy tokens on the dequantised weights', async ({ harness }) => {
  const { url, bytes } = serve(harness, 'q4_0');
  const want = await oracle(bytes);
  for (const tp of [1, 2]) {
    const r = await runGenerate(harness, { ...base, model: url, tp });
    expect(r.tokens, `TP ${tp}`).toEqual(want);
  }
});

test('ranks in other tabs refuse a GGUF (a tab cuts its shard from the raw file by llama2.c offsets)', async ({ harness }) => {
  const { url } = serve(harness, 'f32');
  type W = { tp: { engine: { tryCreate(o: object): Promise<{ tp: number } | { error: { code: string; message: string } }> } } };
  const r = await harness.page.evaluate((model) => (window as unknown as W).tp.engine.tryCreate({ model, tensorParallel: 2, cache: false, tabs: { id: 'gguf-tabs', count: 1 } }), url);
  expect(r).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
  expect('error' in r && r.error.message).toMatch(/ranks in other tabs need a llama2.c model .*not a GGUF file/);
});
