/**
 * The SDK's grammar chunk: `dist/lib/webgpu-tp.js` fetches the grammar library (its own chunk,
 * `dist/lib/xgrammar-<hash>.js`) only for a request with a `responseFormat`, from a plain page
 * with no bundler. Needs `npm run build`.
 */
import { test, expect } from './fixtures.js';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchChromium, repoRoot, serveStatic, sharedModelsDir } from '../src/cli/browser.js';

const libDir = join(repoRoot, 'dist', 'lib');

test('the grammar chunk loads only with the first responseFormat request, and its JSON parses', async () => {
  const entry = join(libDir, 'webgpu-tp.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first`);
  const chunks = readdirSync(libDir).filter((f) => /^xgrammar-.*\.js$/.test(f));
  expect(chunks).toHaveLength(1);
  // The entry stays small; the ~1 MB library is the chunk's.
  expect(statSync(entry).size).toBeLessThan(statSync(join(libDir, chunks[0]!)).size);
  const root = mkdtempSync(join(tmpdir(), 'webgpu-tp-sdk-grammar-'));
  writeFileSync(join(root, 'index.html'), `<!doctype html><title>SDK grammar chunk</title>
<script type="module">import * as sdk from '/dist/lib/webgpu-tp.js'; window.sdk = sdk;</script>`);
  const server = await serveStatic({ root, mounts: { '/models/': sharedModelsDir, '/dist/lib/': libDir } });
  const browser = await launchChromium();
  try {
    const page = await browser.context.newPage();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(new URL(r.url()).pathname));
    await page.goto(`${server.url}/index.html`);
    await page.waitForFunction(() => 'sdk' in window);
    const plain = await page.evaluate(async () => {
      const sdk = (window as unknown as { sdk: typeof import('../src/index.js') }).sdk;
      const engine = await sdk.createEngine({ model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', devices: 'cpu', cache: false });
      (window as unknown as { engine: typeof engine }).engine = engine;
      let text = '';
      for await (const c of engine.generate('Once upon a time', { temperature: 0, maxTokens: 8 })) text += c.text;
      return text;
    });
    expect(plain.length).toBeGreaterThan(0);
    expect(requested.filter((p) => p.includes('xgrammar-')), 'no grammar before a responseFormat').toEqual([]);
    const json = await page.evaluate(async () => {
      const engine = (window as unknown as { engine: Awaited<ReturnType<typeof import('../src/index.js').createEngine>> }).engine;
      const r = await engine.completions.create({ prompt: 'Lily', max_tokens: 48, temperature: 0, response_format: { type: 'json_object' } });
      await engine.dispose();
      return r.choices[0]!;
    });
    expect(requested.filter((p) => p.includes('xgrammar-'))).toEqual([`/dist/lib/${chunks[0]}`]);
    if (json.finish_reason === 'stop') expect(typeof JSON.parse(json.text)).toBe('object');
    else expect(json.text.startsWith('{')).toBe(true);
  } finally {
    await browser.close();
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
});
