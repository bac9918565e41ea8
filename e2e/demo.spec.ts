/**
 * The demo page (index.html, src/demo/) driven as a user would: pick the devices and TP, type a
 * prompt, generate, stop, reload and generate from the shard cache; plus its error panels. The
 * tests that predate CPU ranks pin GPU ranks, so the WebGPU path keeps its coverage.
 */
import { test, expect } from './fixtures.js';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openHarness, repoRoot, sharedModelsDir, type Harness } from '../src/cli/browser.js';
import { MODEL_HEADER_BYTES } from '../src/model/formats/detect.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { encodeGguf } from '../src/model/formats/gguf-write.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';

const MODEL = '/models/stories260K.bin';
const MODEL_SIZE = 1056540;
const GREEDY = 'Once upon a time, there was a little girl named Lily.';

/** Bytes a request asked for: the whole file without a Range, else the range's length. */
function requestedBytes(range: string | undefined, size: number): number {
  const m = /^bytes=(\d+)-(\d*)$/.exec(range ?? '');
  if (!m) return size;
  const end = m[2] ? Number(m[2]) : size - 1;
  return end - Number(m[1]) + 1;
}

let h: Harness;
test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  h = await openHarness({ path: '/index.html' });
  await h.page.setViewportSize({ width: 1280, height: 800 });
});

test.afterAll(async () => {
  await h?.close();
});

async function generateWith(o: { devices?: string; tp?: string; prompt?: string; temperature?: string; maxTokens?: string }) {
  const page = h.page;
  if (o.devices) await page.selectOption('#devices', o.devices);
  if (o.tp) await page.selectOption('#tp', o.tp);
  if (o.prompt !== undefined) await page.fill('#prompt', o.prompt);
  if (o.temperature !== undefined) await page.fill('#temperature', o.temperature);
  if (o.maxTokens !== undefined) await page.fill('#max-tokens', o.maxTokens);
  await page.click('#generate');
}

async function waitForState(state: string | RegExp) {
  await expect(h.page.locator('body')).toHaveAttribute('data-state', state, { timeout: 180_000 });
}

/** Waits for the run a click started to end (Generate is disabled from the click on), in `state`. */
async function runEnds(state: string, page = h.page) {
  await expect(page.locator('#generate')).toBeEnabled({ timeout: 180_000 });
  await expect(page.locator('body')).toHaveAttribute('data-state', state);
}

/** Each workers-table row's backend, from its `data-backend`. */
async function rowBackends(page = h.page): Promise<string[]> {
  return page.locator('#ranks-body tr').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.backend ?? ''));
}

test('TP=2, greedy: the page streams the prompt and its continuation, with tokens/s and per-rank charts', async () => {
  const page = h.page;
  await expect(page.locator('#env-webgpu')).toHaveClass(/ok/);
  await expect(page.locator('#env-isolated')).toHaveClass(/ok/);
  await expect(page.locator('#default-status')).toContainText('Available');
  await generateWith({ devices: 'gpu', tp: '2', prompt: 'Once upon a time', temperature: '0', maxTokens: '24' });
  await waitForState('done');

  const shown = (await page.locator('#output').textContent()) ?? '';
  expect(shown.startsWith(GREEDY), shown).toBe(true);
  await expect(page.locator('#output-prompt')).toHaveText('Once upon a time');
  await expect(page.locator('#tps')).toHaveText(/^\d+(\.\d)?$/);
  await expect(page.locator('#token-count')).toHaveText(/^[1-9]\d*$/);
  await expect(page.locator('#cache-status')).toContainText('0/2 cache hits');
  await expect(page.locator('#engine-info')).toContainText('TP=2');
  await expect(page.locator('#error-panel')).toBeHidden();
  // Every chart has data: its placeholder is gone.
  for (const id of ['steps', 'memory', 'load']) await expect(page.locator(`#chart-${id}-empty`)).toBeHidden();

  mkdirSync(join(repoRoot, 'test-results'), { recursive: true });
  await page.screenshot({ path: join(repoRoot, 'test-results', 'demo.png') });
});

test('Stop aborts a long generation and the page stays usable', async () => {
  const page = h.page;
  await generateWith({ devices: 'gpu', tp: '2', prompt: 'Once upon a time', temperature: '1', maxTokens: '400' });
  await expect(page.locator('#token-count')).toHaveText(/^([3-9]|\d\d+)$/, { timeout: 120_000 });
  await page.click('#stop');
  await waitForState('stopped');
  const stoppedAt = Number(await page.locator('#token-count').textContent());
  expect(stoppedAt).toBeLessThan(400);
  await expect(page.locator('#generate')).toBeEnabled();
  await expect(page.locator('#stop')).toBeDisabled();
  await expect(page.locator('#error-panel')).toBeHidden();

  // Same model and split: the engine is reused and generates again.
  await generateWith({ temperature: '0', maxTokens: '24' });
  await waitForState('done');
  expect(((await page.locator('#output').textContent()) ?? '').startsWith(GREEDY)).toBe(true);
});

test('after a reload the shards come from the cache: hits are shown and no weight requests go out', async () => {
  const page = h.page;
  const mark = h.server.log.length;
  await page.reload();
  await expect(page.locator('#env-webgpu')).toHaveClass(/ok/);
  await generateWith({ devices: 'gpu', tp: '2', prompt: 'Once upon a time', temperature: '0', maxTokens: '24' });
  await waitForState('done');

  await expect(page.locator('#cache-status')).toContainText('2/2 cache hits');
  await expect(page.locator('#cache-status')).toHaveAttribute('data-cache', 'hit');
  expect(((await page.locator('#output').textContent()) ?? '').startsWith(GREEDY)).toBe(true);
  // Only the header (MODEL_HEADER_BYTES) and the probes (size, availability) may touch the weights.
  const weightBytes = h.server.log.slice(mark).filter((r) => r.path === MODEL).reduce((a, r) => a + requestedBytes(r.range, MODEL_SIZE), 0);
  expect(weightBytes).toBeLessThanOrEqual(MODEL_HEADER_BYTES + 64);
});

test('a bad model file shows the typed error with its remedy; a missing URL says how to get the model', async () => {
  const page = h.page;
  await page.click('#source-file');
  await page.setInputFiles('#model-files', [
    { name: 'broken.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(4096, 7) },
    { name: 'tok512.bin', mimeType: 'application/octet-stream', buffer: readFileSync(join(sharedModelsDir, 'tok512.bin')) },
  ]);
  await expect(page.locator('#file-model')).toContainText('broken.bin');
  await expect(page.locator('#file-tokenizer')).toContainText('tok512.bin');
  await page.click('#generate');
  await waitForState('error');
  await expect(page.locator('#error-panel')).toBeVisible();
  await expect(page.locator('#error-code')).toHaveText('MODEL_FORMAT');
  await expect(page.locator('#error-message')).toContainText('llama2.c header');
  await expect(page.locator('#error-remedy')).toContainText('llama2.c checkpoint');
  await expect(page.locator('#generate')).toBeEnabled();

  await page.click('#source-url');
  await page.fill('#model-url', '/models/no-such-model.bin');
  await page.click('#generate');
  await waitForState('error');
  await expect(page.locator('#error-code')).toHaveText('MODEL_MISSING');
  await expect(page.locator('#model-help')).toBeVisible();
  await expect(page.locator('#model-help')).toContainText('stories260K');
});

test('a GGUF by URL runs on its own tokenizer, whatever the tokenizer field says; a .bin without one is refused; the file picker takes keyboard focus', async () => {
  const page = h.page;
  const buf = readFileSync(join(sharedModelsDir, 'stories260K.bin'));
  const stories = loadLlama2c(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  const tok = Tokenizer.parse(readFileSync(join(sharedModelsDir, 'tok512.bin')), 512);
  const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-demo-'));
  try {
    writeFileSync(join(dir, 'stories260K.gguf'), encodeGguf(stories, 'f32', tok));
    // Picked as a file, the page says the GGUF's own tokenizer is used, not the default one.
    await page.click('#source-file');
    await page.setInputFiles('#model-files', join(dir, 'stories260K.gguf'));
    await expect(page.locator('#file-tokenizer')).toHaveText("the GGUF's own");
    const url = h.server.mountFile('/files/demo/stories260K.gguf', join(dir, 'stories260K.gguf'));
    await page.click('#source-url');
    await page.fill('#model-url', url);
    await page.fill('#tokenizer-url', '/models/tok512.bin');
    await generateWith({ devices: 'gpu', tp: '1', prompt: 'Once upon a time', temperature: '0', maxTokens: '48' });
    await waitForState('done');
    const shown = (await page.locator('#output').textContent()) ?? '';
    expect(shown.startsWith(GREEDY), shown).toBe(true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await page.fill('#model-url', MODEL);
  await page.fill('#tokenizer-url', '');
  await page.click('#generate');
  await waitForState('error');
  await expect(page.locator('#error-code')).toHaveText('INVALID_ARGUMENT');
  await expect(page.locator('#error-remedy')).toContainText('tokenizer URL');

  await page.click('#source-file');
  await page.focus('#model-files');
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('model-files');
  await expect(page.locator('#model-files')).toHaveAttribute('accept', /\.gguf/);
  // The source tabs are one tab stop; the arrow keys move between them.
  await page.focus('#source-file');
  await page.keyboard.press('ArrowRight');
  await expect(page.locator('#source-hf')).toHaveAttribute('aria-selected', 'true');
  await expect(page.locator('#panel-hf')).toBeVisible();
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('source-hf');
  await page.keyboard.press('ArrowLeft');
  await expect(page.locator('#panel-file')).toBeVisible();
});

test('the device selector drives the engine: CPU gives CPU ranks, GPU a GPU rank, GPU + CPU one of each, all streaming the same greedy text', async () => {
  const page = h.page;
  await page.click('#source-default');
  const runs = [
    { devices: 'cpu', tp: '2', backends: ['cpu', 'cpu'], summary: 'TP=2 (2 CPU ranks)' },
    { devices: 'gpu', tp: '1', backends: ['gpu'], summary: 'TP=1 (1 GPU rank)' },
    { devices: 'mixed', tp: '2', backends: ['gpu', 'cpu'], summary: 'TP=2 (1 GPU + 1 CPU ranks)' },
  ];
  for (const r of runs) {
    await generateWith({ devices: r.devices, tp: r.tp, prompt: 'Once upon a time', temperature: '0', maxTokens: '16' });
    await runEnds('done');
    const shown = (await page.locator('#output').textContent()) ?? '';
    expect(GREEDY.startsWith(shown) || shown.startsWith(GREEDY), `${r.devices}: ${shown}`).toBe(true);
    expect(shown.length, shown).toBeGreaterThan('Once upon a time'.length + 8);
    expect(await rowBackends(), r.devices).toEqual(r.backends);
    await expect(page.locator('#engine-info')).toContainText(r.summary);
    for (const [i, b] of r.backends.entries()) {
      const row = page.locator('#ranks-body tr').nth(i);
      await expect(row.locator('.kind')).toHaveText(b.toUpperCase());
      if (b === 'cpu') await expect(row.locator('td.device')).toContainText('WebAssembly SIMD');
      else await expect(row.locator('td.device')).not.toContainText('WebAssembly');
    }
    for (const id of ['steps', 'memory', 'load']) await expect(page.locator(`#chart-${id}-empty`)).toBeHidden();
  }
});

test('the default choice is auto: CPU ranks where the only WebGPU adapter is a CPU fallback, GPU ranks on a GPU', async () => {
  const page = h.page;
  await page.reload();
  await expect(page.locator('#env-webgpu')).toHaveClass(/ok/);
  await expect(page.locator('#devices')).toHaveValue('auto');
  const fallback = await page.evaluate(async () => {
    const a = await (navigator as Navigator & { gpu: GPU }).gpu.requestAdapter({ powerPreference: 'high-performance' });
    const i = a!.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
    return !!i.isFallbackAdapter || /swiftshader/i.test(`${i.vendor} ${i.architecture} ${i.description}`);
  });
  await generateWith({ prompt: 'Once upon a time', temperature: '0', maxTokens: '16' });
  await runEnds('done');
  const backends = await rowBackends();
  expect(backends.length).toBeGreaterThan(0);
  expect(new Set(backends)).toEqual(new Set([fallback ? 'cpu' : 'gpu']));
  // The load chart and the cache line count the engine's ranks, not those of a timed candidate.
  const label = await page.locator('#chart-load').getAttribute('aria-label');
  expect(label?.match(/rank \d+/g)).toEqual(backends.map((_, r) => `rank ${r}`));
  await expect(page.locator('#cache-status')).toContainText(`/${backends.length} cache hits`);
  // The engine's own reason for auto's choice is what the page shows.
  await expect(page.locator('#placement-info')).toContainText(fallback ? 'computes on the CPU: CPU ranks' : 'GPU');
  await expect(page.locator('#output')).toContainText('Once upon a time, there was');
});

test('without WebGPU the page runs CPU ranks and an explicit GPU choice fails typed; without cross-origin isolation the page says how to fix it', async () => {
  const context = h.browser.context;
  const noGpu = await context.newPage();
  try {
    await noGpu.addInitScript(() => {
      delete (Navigator.prototype as { gpu?: unknown }).gpu;
    });
    await noGpu.goto(`${h.server.url}/index.html`);
    await expect(noGpu.locator('#env-webgpu')).toHaveText('No WebGPU');
    await expect(noGpu.locator('#env-adapter')).toHaveText('no adapter');
    await noGpu.selectOption('#devices', 'gpu');
    await noGpu.selectOption('#tp', '1');
    await noGpu.click('#generate');
    await runEnds('error', noGpu);
    await expect(noGpu.locator('#error-code')).toHaveText('NO_WEBGPU');
    await expect(noGpu.locator('#error-remedy')).toContainText('WebGPU');

    await noGpu.selectOption('#devices', 'auto');
    await noGpu.fill('#temperature', '0');
    await noGpu.fill('#max-tokens', '16');
    await noGpu.click('#generate');
    await runEnds('done', noGpu);
    await expect(noGpu.locator('#error-panel')).toBeHidden();
    expect(await rowBackends(noGpu)).toEqual(['cpu']);
    await expect(noGpu.locator('#output')).toContainText('Once upon a time, there was');
  } finally {
    await noGpu.close();
  }

  const open = await context.newPage();
  try {
    // The same page served without COOP/COEP: no SharedArrayBuffer.
    await open.route('**/index.html', async (route) => {
      const response = await route.fetch();
      const headers = { ...response.headers() };
      delete headers['cross-origin-opener-policy'];
      delete headers['cross-origin-embedder-policy'];
      await route.fulfill({ response, headers });
    });
    await open.goto(`${h.server.url}/index.html`);
    await expect(open.locator('#error-code')).toHaveText('NOT_ISOLATED');
    await expect(open.locator('#error-remedy')).toContainText('Cross-Origin-Opener-Policy');
    await expect(open.locator('#generate')).toBeDisabled();
  } finally {
    await open.close();
  }
});
