/**
 * Model text is text: the demo page generates with a tokenizer whose pieces were replaced by
 * HTML (`<img src=x onerror=alert(1)>`, `<script>`), and the DOM must show them literally,
 * with no element created from them and no dialog. The modified tokenizer is written to a temp
 * directory at test time and served beside the real model.
 */
import { test, expect } from './fixtures.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openHarness, sharedModelsDir, type Harness } from '../src/cli/browser.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';

const IMG = '<img src=x onerror=alert(1)>';
const SCRIPT = '<script>alert(2)</script>';
const PROMPT = 'Once upon a time';

/** tokenizer.bin bytes: max_token_length, then { f32 score, i32 len, bytes } per piece. */
function encodeTokenizer(pieces: Uint8Array[], scores: Float32Array): Uint8Array {
  const size = 4 + pieces.reduce((n, p) => n + 8 + p.length, 0);
  const out = new Uint8Array(size);
  const dv = new DataView(out.buffer);
  dv.setInt32(0, Math.max(...pieces.map((p) => p.length)), true);
  let o = 4;
  pieces.forEach((p, i) => {
    dv.setFloat32(o, scores[i]!, true);
    dv.setInt32(o + 4, p.length, true);
    out.set(p, o + 8);
    o += 8 + p.length;
  });
  return out;
}

const greedy = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[] };
const original = Tokenizer.parse(readFileSync(join(sharedModelsDir, 'tok512.bin')), 512);
const promptIds = original.encode(PROMPT);
// Two tokens of the greedy continuation that the prompt does not use.
const continuation = greedy.tokens.slice(promptIds.length, promptIds.length + 24);
const [imgId, scriptId] = [...new Set(continuation.filter((t) => !promptIds.includes(t)))] as [number, number];

let h: Harness;
let dir: string;
const dialogs: string[] = [];

test.beforeAll(async () => {
  const pieces = original.pieces.map((p, id) => (id === imgId ? new TextEncoder().encode(IMG) : id === scriptId ? new TextEncoder().encode(SCRIPT) : p));
  const evil = encodeTokenizer(pieces, original.scores);
  // The replaced pieces must not change how the prompt encodes, or the continuation would differ.
  expect(Tokenizer.parse(evil, 512).encode(PROMPT)).toEqual(promptIds);
  dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-html-'));
  writeFileSync(join(dir, 'tok512-html.bin'), evil);
  h = await openHarness({ path: '/index.html', mounts: { '/evil/': dir } });
  h.page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
});

test.afterAll(async () => {
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Elements other than the page's own markup, anywhere in the document. */
async function injectedElements(): Promise<string[]> {
  return h.page.evaluate(() =>
    [...document.querySelectorAll('#output *, #error-panel img, #error-panel script, body img')]
      .filter((e) => !['output-prompt', 'output-text'].includes(e.id))
      .map((e) => e.outerHTML),
  );
}

test('pieces that are HTML are shown as text: no element is created and no dialog fires', async () => {
  const page = h.page;
  await page.click('#source-url');
  await page.fill('#model-url', '/models/stories260K.bin');
  await page.fill('#tokenizer-url', '/evil/tok512-html.bin');
  await page.selectOption('#devices', 'gpu');
  await page.selectOption('#tp', '1');
  await page.fill('#prompt', PROMPT);
  await page.fill('#temperature', '0');
  await page.fill('#max-tokens', '24');
  await page.click('#generate');
  await expect(page.locator('body')).toHaveAttribute('data-state', 'done', { timeout: 180_000 });

  const text = (await page.locator('#output-text').textContent()) ?? '';
  expect(text).toContain(IMG);
  expect(text).toContain(SCRIPT);
  await expect(page.locator('#output')).toContainText(IMG);
  // Only text nodes under the output, and no img or script anywhere.
  expect(await page.evaluate(() => [...document.getElementById('output-text')!.childNodes].every((n) => n.nodeType === Node.TEXT_NODE))).toBe(true);
  expect(await page.locator('img').count()).toBe(0);
  expect(await injectedElements()).toEqual([]);
  expect(dialogs).toEqual([]);
});

test('a prompt and a model URL that are HTML are echoed as text too', async () => {
  const page = h.page;
  const prompt = `${IMG} Once`;
  await page.fill('#prompt', prompt);
  await page.fill('#max-tokens', '4');
  await page.click('#generate');
  await expect(page.locator('body')).toHaveAttribute('data-state', 'done', { timeout: 180_000 });
  await expect(page.locator('#output-prompt')).toHaveText(prompt);

  // The error panel quotes the URL it could not load.
  await page.fill('#model-url', `/models/${IMG}.bin`);
  await page.click('#generate');
  await expect(page.locator('body')).toHaveAttribute('data-state', 'error', { timeout: 60_000 });
  await expect(page.locator('#error-panel')).toBeVisible();
  expect((await page.locator('#error-panel').textContent()) ?? '').toContain(IMG);
  expect(await page.locator('img').count()).toBe(0);
  expect(await injectedElements()).toEqual([]);
  expect(dialogs).toEqual([]);
});
