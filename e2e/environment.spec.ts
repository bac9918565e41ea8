/**
 * The browser environment the engine needs, taken away one piece at a time: no `navigator.gpu`,
 * an adapter request that gives null, and a page served without the cross-origin isolation
 * headers. Asked for GPU ranks (`devices: 'gpu'`, the test page's default), each must end in its
 * typed error with the remedy, from `createEngine`, with no worker left behind (counted by
 * wrapping Worker, e2e/counting.ts). Without WebGPU the engine's own default (`'auto'`) runs on
 * CPU ranks instead.
 */
import { test, expect } from './fixtures.js';
import { openHarness, type Harness, type HarnessOptions } from '../src/cli/browser.js';
import { TEST_PAGE } from '../test-support/test-page.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import { countingInit, counts } from './counting.js';
import { greedy } from './greedy.js';

const o: PageGenerateOptions = {
  model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 2,
  prompt: '', maxTokens: 4, temperature: 0, topP: 0.9, seed: 1,
};

/** Opens the harness without its own WebGPU/isolation probe, runs `load` (of `o` and `over`), returns the error. */
async function loadError(opts: HarnessOptions, over: Partial<PageGenerateOptions> = {}) {
  const h: Harness = await openHarness({ path: TEST_PAGE, ...opts, probe: false });
  try {
    const r = await h.page.evaluate((x) => window.tp.engine.load(x), { ...o, ...over });
    expect('error' in r).toBe(true);
    const c = await counts(h.page);
    return { error: (r as { error: { name: string; code?: string; message: string; extra?: { remedy?: string; fitsAt?: number } } }).error, counts: c, isolated: await h.page.evaluate(() => crossOriginIsolated) };
  } finally {
    await h.close();
  }
}

test('no navigator.gpu and devices: "gpu": createEngine throws WebGpuUnavailableError naming CPU ranks as the remedy, before any worker', async () => {
  const r = await loadError({ initScript: `delete Navigator.prototype.gpu;\n${countingInit()}` });
  expect(r.error).toMatchObject({ name: 'WebGpuUnavailableError', code: 'NO_WEBGPU' });
  expect(r.error.message).toContain('navigator.gpu is missing, and devices: "gpu" asks for WebGPU ranks');
  expect(r.error.extra?.remedy).toMatch(/browser with WebGPU/);
  expect(r.error.extra?.remedy).toContain('run on CPU ranks, which need no WebGPU: devices: "cpu"');
  expect(r.counts.workersMade).toBe(0);
});

test('no navigator.gpu: the default createEngine generates on CPU ranks, greedy stories260K as llama2.c documents it', async () => {
  const h: Harness = await openHarness({ path: TEST_PAGE, initScript: 'delete Navigator.prototype.gpu;', probe: false });
  try {
    expect(await h.page.evaluate(() => 'gpu' in navigator)).toBe(false);
    const r = await h.page.evaluate(() => window.tp.engine.generateOnDefault('/models/stories260K.bin', '/models/tok512.bin', '', 256));
    if ('error' in r) throw new Error(`${r.error.name}: ${r.error.message}`);
    expect(r.tokens).toEqual(greedy.tokens.slice(1));
    const p = r.stats.placement!;
    expect(p.mode).toBe('auto');
    expect(p.reason).toContain('no WebGPU (navigator.gpu is missing): CPU ranks (WebAssembly SIMD)');
    expect(p.ranks.map((x) => x.backend)).toEqual(Array.from({ length: r.tp }, () => 'cpu'));
    expect(r.stats.ranks.map((x) => [x.backend, x.adapter])).toEqual(Array.from({ length: r.tp }, () => ['cpu', 'CPU (WebAssembly SIMD)']));
    const t = p.timing;
    console.log(`no WebGPU, default devices: TP=${r.tp}; loaded in ${r.loadMs.toFixed(0)} ms${t ? `, of which choosing ${t.totalMs.toFixed(0)} ms (${t.candidates.map((c) => `${c.label} ${c.msPerStep.toFixed(2)} ms/step`).join(', ')})` : ''}`);
  } finally {
    await h.close();
  }
});

test('a CPU rank too large for its 4 GiB memory fails before loading, naming the smallest degree that fits', async () => {
  // 7000 KV-cache slots of 512 positions: 4.3 GiB of cache on one rank, 2.1 GiB on each of two.
  const r = await loadError({ initScript: countingInit() }, { devices: 'cpu', tp: 1, maxBatch: 7000 });
  expect(r.error).toMatchObject({ name: 'RankMemoryError', code: 'RANK_MEMORY' });
  expect(r.error.message).toMatch(/^At TP=1 a CPU rank needs 4\.\d\d GiB \(rank 0: shard 1\.1 MiB \+ KV cache 4375\.0 MiB \+ activations 0\.\d MiB\), over one WebAssembly memory's 4\.00 GiB/);
  expect(r.error.extra?.fitsAt).toBe(2);
  expect(r.error.extra?.remedy).toContain('at least 2 CPU ranks (tensorParallel: 2)');
  expect(r.counts.workersMade).toBe(0);
});

test('requestAdapter gives null in the rank workers: WebGpuUnavailableError with the remedy, every worker terminated', async () => {
  const noAdapter = 'GPU.prototype.requestAdapter = async () => null;\n';
  // Only inside the workers: the page's placement probe still sees an adapter, the ranks do not.
  const r = await loadError({ initScript: countingInit(noAdapter) });
  expect(r.error).toMatchObject({ name: 'WebGpuUnavailableError', code: 'NO_WEBGPU' });
  expect(r.error.message).toContain('gave no adapter');
  expect(r.error.extra?.remedy).toMatch(/enable-unsafe-webgpu/);
  expect(r.counts.workersMade).toBeGreaterThan(0);
  expect(r.counts.workersAlive).toBe(0);
  // Everywhere: the page finds out before it starts any worker.
  const early = await loadError({ initScript: `${noAdapter}${countingInit(noAdapter)}` });
  expect(early.error).toMatchObject({ name: 'WebGpuUnavailableError', code: 'NO_WEBGPU' });
  expect(early.error.extra?.remedy).toMatch(/enable-unsafe-webgpu/);
  expect(early.counts.workersAlive).toBe(0);
});

test('served without COOP/COEP: NotIsolatedError naming both headers', async () => {
  const r = await loadError({ isolated: false, initScript: countingInit() });
  expect(r.isolated).toBe(false);
  expect(r.error).toMatchObject({ name: 'NotIsolatedError', code: 'NOT_ISOLATED' });
  expect(r.error.message).toContain('Cross-Origin-Opener-Policy: same-origin');
  expect(r.error.message).toContain('Cross-Origin-Embedder-Policy: require-corp');
  expect(r.counts.workersMade).toBe(0);
});
