/**
 * The SDK as a consumer gets it: a tiny app (e2e/consumer/) imports `createEngine` from
 * 'webgpu-tp', resolved through `node_modules/webgpu-tp` → this repository (its package.json
 * `exports`, so the built dist/lib/), and generates greedily with stories260K at TP=2. Run from
 * a Vite production build, from a Vite dev server (where the dependency is pre-bundled into
 * node_modules/.vite/deps, the case that breaks a worker loaded by a relative URL), and from a
 * plain `<script type="module">` page with no bundler under both COEP modes. Needs `npm run build`.
 */
import { test, expect } from './fixtures.js';
import { build, createServer } from 'vite';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchChromium, repoRoot, serveStatic, sharedModelsDir, type LaunchedBrowser } from '../src/cli/browser.js';

const fixtures = join(repoRoot, 'e2e', 'consumer');
const libDir = join(repoRoot, 'dist', 'lib');
const STORY = 'Once upon a time, there was a little girl named Lily.';
const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

test.describe.configure({ mode: 'serial' });

let browser: LaunchedBrowser;
let app: string;

test.beforeAll(async () => {
  if (!existsSync(join(libDir, 'webgpu-tp.js'))) throw new Error(`${libDir}/webgpu-tp.js is missing: run \`npm run build\` first`);
  app = mkdtempSync(join(tmpdir(), 'webgpu-tp-consumer-'));
  cpSync(fixtures, app, { recursive: true });
  mkdirSync(join(app, 'node_modules'));
  symlinkSync(repoRoot, join(app, 'node_modules', 'webgpu-tp'), 'dir');
  browser = await launchChromium();
});

test.afterAll(async () => {
  await browser?.close();
  if (app) rmSync(app, { recursive: true, force: true });
});

/** Opens `url`, waits for the app to finish (or throw), and returns what it wrote. */
async function runApp(url: string) {
  const page = await browser.context.newPage();
  const log: string[] = [];
  const workers: string[] = [];
  const requests: string[] = [];
  page.on('console', (m) => log.push(`[${m.type()}] ${m.text()}`));
  page.on('worker', (w) => workers.push(w.url()));
  page.on('request', (r) => requests.push(r.url()));
  const failed = new Promise<never>((_, fail) => page.on('pageerror', fail));
  failed.catch(() => {});
  try {
    await page.goto(url);
    await Promise.race([page.waitForFunction(() => document.body.dataset.done === 'true', null, { timeout: 90_000 }), failed]);
    const text = (await page.locator('output').textContent()) ?? '';
    return { text, workers, requests, isolated: await page.evaluate(() => crossOriginIsolated) };
  } catch (e) {
    throw new Error(`${url}: ${(e as Error).message}\n${log.join('\n')}`);
  } finally {
    await page.close();
  }
}

/** What every setup must show: the reference story, from two inline (Blob URL) rank workers. */
function expectStory(r: Awaited<ReturnType<typeof runApp>>) {
  expect(r.isolated).toBe(true);
  expect(r.text.startsWith(STORY), r.text).toBe(true);
  expect(r.workers).toHaveLength(2);
  for (const w of r.workers) expect(w.startsWith('blob:'), w).toBe(true);
}

test("the README's example is the consumer app's code", () => {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const section = readme.split(/^## Embed it$/m)[1]?.split(/^## /m)[0] ?? '';
  const snippet = /```js\n([\s\S]*?)```/.exec(section)?.[1]?.trim();
  expect(snippet, 'README.md has an "## Embed it" section with a ```js example').toBeTruthy();
  expect(readFileSync(join(fixtures, 'main.js'), 'utf8')).toContain(snippet!);
});

test('a Vite production build of a consumer app', async () => {
  const outDir = join(app, 'dist');
  await build({ root: app, configFile: false, logLevel: 'warn', build: { outDir, emptyOutDir: true } });
  const server = await serveStatic({ root: outDir, mounts: { '/models/': sharedModelsDir } });
  try {
    expectStory(await runApp(`${server.url}/index.html`));
  } finally {
    await server.close();
  }
});

test('a Vite dev server with the package pre-bundled', async () => {
  const models = await serveStatic({ root: app, mounts: { '/models/': sharedModelsDir } });
  const vite = await createServer({
    root: app,
    configFile: false,
    logLevel: 'warn',
    // A linked package is served as source unless listed; an installed one is pre-bundled.
    optimizeDeps: { include: ['webgpu-tp'], force: true },
    server: { host: '127.0.0.1', port: 0, headers: isolation, proxy: { '/models': models.url } },
  });
  try {
    await vite.listen();
    const url = vite.resolvedUrls!.local[0]!.replace(/\/$/, '');
    const r = await runApp(`${url}/index.html`);
    expect(r.requests.some((u) => u.includes('/node_modules/.vite/deps/webgpu-tp.js')), 'webgpu-tp came pre-bundled').toBe(true);
    expectStory(r);
  } finally {
    await vite.close();
    await models.close();
  }
});

for (const coep of ['require-corp', 'credentialless'] as const) {
  test(`a plain <script type=module> page, no bundler, COEP ${coep}`, async () => {
    const server = await serveStatic({ root: fixtures, coep, mounts: { '/models/': sharedModelsDir, '/dist/lib/': libDir } });
    try {
      expectStory(await runApp(`${server.url}/plain.html`));
    } finally {
      await server.close();
    }
  });
}
