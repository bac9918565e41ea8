import { test, expect } from './fixtures.js';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runGenerate } from '../src/cli/generate.js';
import type { Harness } from '../src/cli/browser.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { exportHf } from '../test-support/model/hf-export.js';
import { byteLevelTokenizer, randomWeights, stackWeights, TINY_QWEN2 } from '../test-support/model/hf-testing.js';
import { mapFiles, openHfModel, readBytes } from '../src/loader/hf-model.js';
import { HfTokenizer } from '../src/model/tokenizer/hf-tokenizer.js';
import { modelsDir, readArrayBuffer, repoRoot } from '../test-support/fixtures/paths.js';
import * as R from '../src/model/reference.js';

// Hugging Face models, written by this spec (there is no network) and served like the Hub's
// `resolve/main/` URLs by the harness's Range-capable server.
const greedy = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[] };
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-hf-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes `files` and serves them under `/hf/NAME/resolve/main/`; returns that base URL path. */
function serve(h: Harness, name: string, files: Map<string, Uint8Array>): string {
  const base = `/hf/${name}/resolve/main`;
  for (const [file, bytes] of files) {
    const path = join(dir, `${name}-${file}`);
    writeFileSync(path, bytes);
    h.server.mountFile(`${base}/${file}`, path);
  }
  return base;
}

const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
const storiesFiles = exportHf(stories.config, stories.weights, { shards: 2, bosTokenId: 1, eosTokenId: 2 });

const qwenWeights = randomWeights(TINY_QWEN2, 12, 3);
const qwenTok = byteLevelTokenizer();
const qwenFiles = exportHf(TINY_QWEN2, qwenWeights, { dtype: 'BF16', eosTokenId: 276 });
qwenFiles.set('tokenizer.json', new TextEncoder().encode(JSON.stringify(qwenTok.json)));
qwenFiles.set('tokenizer_config.json', new TextEncoder().encode(JSON.stringify(qwenTok.config)));

// A Llama with attention_bias: o_proj's bias is row-parallel, added once after the all-reduce.
const biasedConfig = { ...TINY_QWEN2, outBias: true };
const biasedWeights = randomWeights(biasedConfig, 5, 3);
const biasedFiles = exportHf(biasedConfig, biasedWeights, { architecture: 'LlamaForCausalLM', dtype: 'BF16', eosTokenId: 276 });
biasedFiles.set('tokenizer.json', qwenFiles.get('tokenizer.json')!);
biasedFiles.set('tokenizer_config.json', qwenFiles.get('tokenizer_config.json')!);

test.describe.configure({ mode: 'serial' });

// All 256 tokens at TP 1; at TP 2 (whose 256 are e2e/engine.spec.ts's) the first 64 show the
// HF weights sliced per rank.
for (const [tp, steps] of [[1, 256], [2, 64]] as const) {
  test(`stories260K as an HF safetensors model (2 shards, q/k permuted) with tok512.bin at TP=${tp}: llama2.c's first ${steps} greedy tokens`, async ({ harness }) => {
    const hf = serve(harness, 'stories', storiesFiles);
    const r = await runGenerate(harness, {
      model: { hf }, tokenizer: '/models/tok512.bin', tp, prompt: '', maxTokens: steps, temperature: 0, topP: 0.9, seed: 1, cache: false,
    });
    expect(r.prompt_tokens).toEqual([1]);
    expect(r.tokens).toEqual(greedy.tokens.slice(1, steps + 1));
  });
}

test('stories260K as an F16 HF model at TP 1 and 2: matrices stay f16 on the GPU (packed kernels here), the oracle\'s greedy tokens on the f16-rounded weights', async ({ harness }) => {
  const files = exportHf(stories.config, stories.weights, { dtype: 'F16', bosTokenId: 1, eosTokenId: 2 });
  const m = await openHfModel(mapFiles(files));
  const model = { config: m.config, weights: stackWeights(m.config, m.tensors, await readBytes(m.source)) };
  const want = R.generate(model, [1], 48, (l) => R.argmax(l, 512)).slice(1);
  const hf = serve(harness, 'stories-f16', files);
  for (const tp of [1, 2]) {
    const r = await runGenerate(harness, { model: { hf }, tokenizer: '/models/tok512.bin', tp, prompt: '', maxTokens: 48, temperature: 0, topP: 0.9, seed: 1, cache: false });
    expect(r.tokens, `TP ${tp}`).toEqual(want);
    for (const rs of r.stats.ranks) expect(rs.precision).toMatchObject({ weights: 'f16', math: 'f32', f16Kernels: 'packed', kvCache: 'f32' });
  }
});

/**
 * The oracle's greedy continuation of `prompt`, and how many of its tokens are decided by a
 * top-2 logit margin above `tol` (the GPU's f32 sums are ordered differently).
 */
function oracleGreedy(prompt: number[], steps: number, tol: number, model: R.ReferenceModel = { config: TINY_QWEN2, weights: qwenWeights }): { tokens: number[]; decided: number } {
  const s = R.createRunState(model.config);
  const tokens: number[] = [];
  let decided = -1;
  let logits: Float32Array = new Float32Array(0);
  for (let pos = 0; pos < prompt.length; pos++) logits = R.forward(model, s, prompt[pos]!, pos);
  for (let i = 0; i < steps; i++) {
    const sorted = [...logits].sort((a, b) => b - a);
    if (decided < 0 && sorted[0]! - sorted[1]! < tol) decided = i;
    const next = R.argmax(logits, model.config.vocabSize);
    tokens.push(next);
    logits = R.forward(model, s, next, prompt.length + i);
  }
  return { tokens, decided: decided < 0 ? steps : decided };
}

for (const tp of [1, 2]) {
  test(`a random BF16 Qwen2-style model (biases, tied, GQA, head_dim 16 ≠ 48/4, θ=1e6) matches the oracle at TP=${tp}, through its chat template`, async ({ harness }) => {
    const hf = serve(harness, 'qwen', qwenFiles);
    const o: PageGenerateOptions = { model: { hf }, tp, prompt: 'Say hello 世界 🙂', chat: true, maxTokens: 32, temperature: 0, topP: 0.9, seed: 1, ignoreEos: true, cache: false };
    const r = await runGenerate(harness, o);
    const tok = new HfTokenizer(qwenTok.json, qwenTok.config);
    const prompt = tok.encode(tok.applyChatTemplate([{ role: 'user', content: 'Say hello 世界 🙂' }]), false);
    expect(r.prompt_tokens).toEqual(prompt);
    const want = oracleGreedy(prompt, 32, 1e-3);
    expect(want.decided).toBeGreaterThanOrEqual(8);
    expect(new Set(want.tokens).size).toBeGreaterThan(3);
    expect(r.tokens.slice(0, want.decided)).toEqual(want.tokens.slice(0, want.decided));
  });
}

for (const tp of [1, 2]) {
  test(`a random BF16 Llama with attention_bias (q/k/v/o biases) matches the oracle at TP=${tp}`, async ({ harness }) => {
    const hf = serve(harness, 'llama-bias', biasedFiles);
    const r = await runGenerate(harness, { model: { hf }, tp, prompt: 'Say hello 世界 🙂', chat: true, maxTokens: 24, temperature: 0, topP: 0.9, seed: 1, ignoreEos: true, cache: false });
    const want = oracleGreedy(r.prompt_tokens, 24, 1e-3, { config: biasedConfig, weights: biasedWeights });
    expect(want.decided).toBeGreaterThanOrEqual(8);
    expect(r.tokens.slice(0, want.decided)).toEqual(want.tokens.slice(0, want.decided));
  });
}

test('a second load of an HF model comes from the f32 shard cache: only the headers are read again', async ({ harness }) => {
  const hf = serve(harness, 'cached', qwenFiles);
  const weights = `${hf}/model.safetensors`;
  const opts: PageGenerateOptions = { model: { hf }, tp: 2, prompt: 'Say hello', maxTokens: 4, temperature: 0, topP: 0.9, seed: 1, cache: true };
  await harness.page.evaluate(() => window.tp.engine.clearCache());
  const first = await harness.page.evaluate((o) => window.tp.engine.load(o), opts);
  expect('error' in first ? first.error : null).toBeNull();
  await harness.page.evaluate(() => window.tp.engine.disposeAll());
  const mark = harness.server.log.length;
  const second = await harness.page.evaluate(async (o) => {
    const events: { rank: number; fromCache: boolean }[] = [];
    const r = await window.tp.engine.load({ ...o, onProgressLog: events });
    return { r, events };
  }, opts);
  expect('error' in second.r ? second.r.error : null).toBeNull();
  expect([...new Set(second.events.filter((e) => e.fromCache).map((e) => e.rank))].sort()).toEqual([0, 1]);
  expect(second.events.some((e) => !e.fromCache)).toBe(false);
  // Every request for the weights file now is a header-sized Range, none a full download.
  const reqs = harness.server.log.slice(mark).filter((r) => r.path === weights);
  expect(reqs.length).toBeGreaterThan(0);
  for (const r of reqs) expect(r.range).toMatch(/^bytes=0-\d{1,5}$/);
  const out = await runGenerate(harness, opts);
  expect(out.tokens).toEqual(oracleGreedy(out.prompt_tokens, 4, 1e-3).tokens);
  await harness.page.evaluate(() => window.tp.engine.disposeAll());
});

test('an HF model whose files are missing names the file', async ({ harness }) => {
  const hf = serve(harness, 'broken', new Map([...qwenFiles].filter(([k]) => k !== 'model.safetensors')));
  const err = await runGenerate(harness, { model: { hf }, tp: 1, prompt: 'x', maxTokens: 1, temperature: 0, topP: 0.9, seed: 1, cache: false }).then(
    () => null,
    (e: Error & { code?: string }) => e,
  );
  expect(err?.name).toBe('ModelFormatError');
  expect(err?.message).toMatch(/model.safetensors is missing/);
});

test('the demo page\'s "Hugging Face" field loads a model from its base URL', async ({ harness }) => {
  const hf = serve(harness, 'qwen', qwenFiles);
  const page = await harness.browser.context.newPage();
  try {
    await page.goto(`${harness.server.url}/index.html`);
    await page.click('#source-hf');
    await page.fill('#hf-url', `${harness.server.url}${hf}`);
    await expect(page.locator('#model-name')).toHaveText('qwen');
    await page.selectOption('#devices', 'gpu');
    await page.selectOption('#tp', '2');
    await page.fill('#prompt', 'Say hello');
    await page.fill('#temperature', '0');
    await page.fill('#max-tokens', '6');
    await page.click('#generate');
    await expect(page.locator('body')).toHaveAttribute('data-state', /done|error/, { timeout: 180_000 });
    await expect(page.locator('#error-panel')).toBeHidden();
    await expect(page.locator('#engine-info')).toContainText('TP=2');
    await expect(page.locator('#output-prompt')).toHaveText('Say hello');
  } finally {
    await page.close();
  }
});

/** Writes `files` into a directory of their own, as a downloaded model would be. */
function writeDir(name: string, files: Map<string, Uint8Array>): string {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  for (const [file, bytes] of files) writeFileSync(join(d, file), bytes);
  return d;
}

test('`webgpu-tp generate --model DIR|FILE.safetensors`, with --chat or a llama2.c --tokenizer', async () => {
  const run = promisify(execFile);
  const cli = resolve(repoRoot, 'dist/cli/main.js');
  const qwen = writeDir('qwen-dir', qwenFiles);
  const { stdout } = await run('node', [cli, 'generate', '--devices', 'gpu', '--model', join(qwen, 'model.safetensors'), '--chat', '--prompt', 'Say hello 世界 🙂', '--temperature', '0', '--max-tokens', '8', '--ignore-eos', '--json', '--no-cache'], { timeout: 240_000 });
  const r = JSON.parse(stdout) as { prompt_tokens: number[]; tokens: number[] };
  const tok = new HfTokenizer(qwenTok.json, qwenTok.config);
  const prompt = tok.encode(tok.applyChatTemplate([{ role: 'user', content: 'Say hello 世界 🙂' }]), false);
  expect(r.prompt_tokens).toEqual(prompt);
  expect(r.tokens).toEqual(oracleGreedy(prompt, 8, 1e-3).tokens);

  const storiesDir = writeDir('stories-dir', storiesFiles);
  // the directory on CPU ranks: the claim is the CLI's --model DIR (GPU ranks: the file above)
  const s = await run('node', [cli, 'generate', '--devices', 'cpu', '--model', storiesDir, '--tokenizer', resolve(modelsDir, 'tok512.bin'), '--tp', '2', '--temperature', '0', '--max-tokens', '16', '--json', '--no-cache'], { timeout: 240_000 });
  expect((JSON.parse(s.stdout) as { tokens: number[] }).tokens).toEqual(greedy.tokens.slice(1, 17));
});
