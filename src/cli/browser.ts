/**
 * The one way webgpu-tp gets a real browser: tests, benchmarks and the CLI all call
 * `openHarness()`. It finds a Chromium, launches it headless with WebGPU on, serves the built app
 * from 127.0.0.1 with the cross-origin isolation headers, and returns a page on which
 * `crossOriginIsolated` is true and `navigator.gpu` yields an adapter.
 */
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createServer, type Server, type IncomingMessage, type ServerResponse } from 'node:http';
import { existsSync } from 'node:fs';
import { extname, join, resolve, normalize, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BrowserNotFoundError, WebGpuUnavailableError, NotIsolatedError } from '../errors.js';
import { isFile, sendFile } from './send-file.js';

const here = dirname(fileURLToPath(import.meta.url));
/** Repository root, from either src/cli (tsx, vitest) or dist/cli (built). */
export const repoRoot = resolve(here, '..', '..');
export const appDir = join(repoRoot, 'dist', 'app');
/** The test models, served at /models/: ../shared/models beside the repo, or WEBGPU_TP_MODELS. */
export const sharedModelsDir = resolve(repoRoot, process.env.WEBGPU_TP_MODELS ?? join('..', 'shared', 'models'));
/** The page the CLI drives (src/cli/page/index.html), as the app build serves it. */
export const CLI_PAGE = '/src/cli/page/index.html';

export const WEBGPU_FLAGS = [
  '--no-sandbox',
  '--enable-unsafe-webgpu',
  '--enable-features=Vulkan',
  '--use-angle=swiftshader',
  '--use-webgpu-adapter=swiftshader',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
] as const;

/** Full-precision timestamp queries, for benchmarks only. */
export const BENCH_FLAGS = ['--enable-webgpu-developer-features'] as const;

/** The system's Chromium or Chrome, at the usual install paths. */
export const SYSTEM_CHROMIUM = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/snap/bin/chromium',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
  '/opt/google/chrome/chrome',
  '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
  '/Applications/Chromium.app/Contents/MacOS/Chromium',
];

/** What `resolveChromium` looks at, passed in so that its order can be tested without a disk. */
export interface ChromiumLookup {
  env: NodeJS.ProcessEnv;
  exists(path: string): boolean;
  /** Where `npx playwright install chromium` puts Playwright's own Chromium (it may be absent). */
  playwrightPath(): string | undefined;
}

/**
 * The first Chromium that exists: `CHROME_PATH`, then the system's, then Playwright's own.
 * Throws `BrowserNotFoundError` listing every path it tried.
 */
export function resolveChromium({ env, exists, playwrightPath }: ChromiumLookup): string {
  const tried: string[] = [];
  const pw = playwrightPath();
  const candidates = [...(env.CHROME_PATH ? [env.CHROME_PATH] : []), ...SYSTEM_CHROMIUM, ...(pw ? [pw] : [])];
  for (const c of candidates) {
    if (exists(c)) return c;
    tried.push(c === env.CHROME_PATH ? `CHROME_PATH=${c}` : c);
  }
  throw new BrowserNotFoundError(tried);
}

function playwrightChromium(): string | undefined {
  try {
    return chromium.executablePath();
  } catch {
    return undefined; // a platform Playwright has no build for
  }
}

/** `resolveChromium` on this machine. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string {
  return resolveChromium({ env, exists: existsSync, playwrightPath: playwrightChromium });
}

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

export interface StaticServer {
  url: string;
  server: Server;
  /** Serve one local file at a path such as `/files/model.bin`; returns that path as a URL (percent-encoded). */
  mountFile(urlPath: string, file: string): string;
  /** Counts of requests per URL path, for tests that must see no weight requests. */
  requests: Map<string, number>;
  /** Every request in order, with its Range header, for tests that must see no weight requests. */
  log: { path: string; range?: string }[];
  close(): Promise<void>;
}

export interface ServeOptions {
  root?: string;
  /** URL prefix → directory, e.g. `{'/models/': sharedModelsDir}`. */
  mounts?: Record<string, string>;
  /** The COEP value; `credentialless` is also a valid isolation mode. */
  coep?: 'require-corp' | 'credentialless';
  /** Send COOP/COEP (default true); false serves a page that is not cross-origin isolated (tests). */
  isolated?: boolean;
}

/** A static server on 127.0.0.1 with COOP/COEP (unless `isolated: false`) and HTTP Range support, on a free port. */
export async function serveStatic(opts: ServeOptions = {}): Promise<StaticServer> {
  const root = opts.root ?? appDir;
  const mounts = new Map<string, string>(Object.entries(opts.mounts ?? {}));
  const files = new Map<string, string>();
  const requests = new Map<string, number>();
  const log: { path: string; range?: string }[] = [];
  const isolation = {
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': opts.coep ?? 'require-corp',
    'Cross-Origin-Resource-Policy': 'same-origin',
  };
  const headers = { ...(opts.isolated === false ? {} : isolation), 'Cache-Control': 'no-store' };

  const resolvePath = (urlPath: string): string | undefined => {
    const file = files.get(urlPath);
    if (file) return file;
    for (const [prefix, dir] of mounts) {
      if (urlPath.startsWith(prefix)) return safeJoin(dir, urlPath.slice(prefix.length));
    }
    const p = safeJoin(root, urlPath === '/' ? 'index.html' : urlPath);
    return p;
  };

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    let urlPath: string;
    try {
      urlPath = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    } catch {
      res.writeHead(400, headers).end('malformed URL escape');
      return;
    }
    requests.set(urlPath, (requests.get(urlPath) ?? 0) + 1);
    log.push({ path: urlPath, range: req.headers.range });
    const path = resolvePath(urlPath);
    if (!path || !isFile(path)) {
      res.writeHead(404, headers).end('not found');
      return;
    }
    sendFile(req, res, path, headers, MIME[extname(path)]);
  };

  const server = createServer(handler);
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('server has no port');
  const url = `http://127.0.0.1:${address.port}`;
  return {
    url,
    server,
    requests,
    log,
    mountFile(urlPath, file) {
      files.set(urlPath, resolve(file));
      // The page fetches this URL: a file name with '#', '?' or '%' must not end or bend it.
      return urlPath.split('/').map(encodeURIComponent).join('/');
    },
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

function safeJoin(dir: string, rel: string): string | undefined {
  const p = normalize(join(dir, rel));
  return p.startsWith(normalize(dir)) ? p : undefined;
}

export interface LaunchOptions {
  /** Add `--enable-webgpu-developer-features` (full-precision timestamp queries). */
  bench?: boolean;
  /** A persistent profile directory (the CLI's shard cache lives there). */
  userDataDir?: string;
  extraArgs?: string[];
}

export interface LaunchedBrowser {
  context: BrowserContext;
  browser: Browser | null;
  close(): Promise<void>;
}

export async function launchChromium(opts: LaunchOptions = {}): Promise<LaunchedBrowser> {
  const executablePath = findChromium();
  const args = [...WEBGPU_FLAGS, ...(opts.bench ? BENCH_FLAGS : []), ...(opts.extraArgs ?? [])];
  if (opts.userDataDir) {
    const context = await chromium.launchPersistentContext(opts.userDataDir, { executablePath, headless: true, args });
    return { context, browser: null, close: () => context.close() };
  }
  const browser = await chromium.launch({ executablePath, headless: true, args });
  const context = await browser.newContext();
  return { context, browser, close: () => browser.close() };
}

export interface Harness {
  page: Page;
  server: StaticServer;
  browser: LaunchedBrowser;
  /** Console lines from the page, for diagnosing failures. */
  console: string[];
  close(): Promise<void>;
}

export interface HarnessOptions extends LaunchOptions, ServeOptions {
  /** The page to open; default `CLI_PAGE`. */
  path?: string;
  /** Script run in every page and worker realm before the app (e.g. to wrap createBuffer). */
  initScript?: string;
  /**
   * Check that the page is isolated and has a WebGPU adapter (default true). Tests of what the
   * engine does without them turn it off.
   */
  probe?: boolean;
}

/**
 * Opens a page of the app build (the CLI's by default) in headless Chromium and checks that it
 * can do WebGPU and SharedArrayBuffer. Throws a typed error that names the fix when either is missing.
 */
export async function openHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const path = opts.path ?? CLI_PAGE;
  const root = opts.root ?? appDir;
  if (!existsSync(join(root, path.split('?')[0]!))) {
    throw new Error(`${join(root, path)} is missing: run \`npm run build\` first`);
  }
  const server = await serveStatic({ ...opts, mounts: { '/models/': sharedModelsDir, ...opts.mounts } });
  let browser: LaunchedBrowser | undefined;
  try {
    browser = await launchChromium(opts);
    const page = await browser.context.newPage();
    const lines: string[] = [];
    page.on('console', (m) => lines.push(`[${m.type()}] ${m.text()}`));
    page.on('pageerror', (e) => lines.push(`[pageerror] ${e.message}`));
    if (opts.initScript) await page.addInitScript(opts.initScript);
    await page.goto(`${server.url}${path}`);
    await page.waitForFunction(() => (window as unknown as { tpReady?: boolean }).tpReady === true || document.readyState === 'complete', null, { timeout: 60_000 });
    const probe = opts.probe === false ? { isolated: true, gpu: true, adapter: true } : await page.evaluate(async () => {
      const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
      const adapter = gpu ? await gpu.requestAdapter() : null;
      return { isolated: crossOriginIsolated, gpu: !!gpu, adapter: !!adapter };
    });
    if (!probe.isolated) throw new NotIsolatedError();
    if (!probe.adapter) throw new WebGpuUnavailableError(probe.gpu ? 'navigator.gpu gave no adapter' : 'navigator.gpu is missing');
    const b = browser;
    return {
      page,
      server,
      browser: b,
      console: lines,
      close: async () => {
        await b.close().catch(() => {});
        await server.close();
      },
    };
  } catch (e) {
    await browser?.close().catch(() => {});
    await server.close();
    throw e;
  }
}
