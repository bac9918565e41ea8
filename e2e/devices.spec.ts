/**
 * Where ranks run: `devices` as a count, as a list of specs (power preference, the CPU
 * fallback, a filter on adapter.info) and as "auto". Every adapter here is SwiftShader, the
 * browser's CPU fallback, so "auto" picks CPU ranks; the "auto" cases that need a real GPU, a
 * second one or a small one get it from a page script that changes what the main thread's
 * `requestAdapter` reports (the workers still get the real adapter): the placement decision is
 * made on the main thread from exactly those reports.
 */
import { test as base, expect, scriptedHarness } from './fixtures.js';
import { readFileSync } from 'node:fs';
import type { Harness } from '../src/cli/browser.js';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';

const greedy = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[] };
const want = greedy.tokens.slice(1, 33);
const base_: PageGenerateOptions = {
  model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 0, prompt: '', maxTokens: want.length, temperature: 0, topP: 0.9, seed: 1,
};
const SWIFTSHADER = 'google / swiftshader (fallback)';
const CPU = 'CPU (WebAssembly SIMD)';
const FAKE_GPU_NAME = 'fake-gpu / fake / first adapter (test)';

/** Rewrites what the main thread's requestAdapter reports, as `window.__gpuFake` says. */
const FAKE_GPU = `
(() => {
  const request = GPU.prototype.requestAdapter;
  GPU.prototype.requestAdapter = async function (o) {
    const a = await request.call(this, o);
    const fake = window.__gpuFake;
    if (!a || !fake) return a;
    // A real GPU, as far as the page can tell: not the fallback, not named SwiftShader.
    const i = a.info;
    const gpu = (vendor, description) => Object.defineProperty(a, 'info', { value: { vendor, architecture: 'fake', device: '', description,
      isFallbackAdapter: false, subgroupMinSize: i.subgroupMinSize, subgroupMaxSize: i.subgroupMaxSize } });
    if (fake.lowPowerIsOther && o && o.powerPreference === 'low-power') gpu('fake-igpu', 'second adapter (test)');
    else if (fake.real) gpu('fake-gpu', 'first adapter (test)');
    if (fake.limit) {
      const l = a.limits;
      const small = new Proxy(l, { get: (t, k) => (k === 'maxStorageBufferBindingSize' ? fake.limit : t[k]) });
      Object.defineProperty(a, 'limits', { value: small });
    }
    return a;
  };
})();
`;

const test = base.extend<{ faked: Harness }>({ faked: scriptedHarness(FAKE_GPU) });

test.describe.configure({ mode: 'serial' });

test('devices: 2 places two ranks on the default adapter and gives the reference tokens', async ({ harness }) => {
  const r = await runGenerate(harness, { ...base_, devices: 2 });
  expect(r.tokens).toEqual(want);
  expect(r.tp).toBe(2);
  const p = r.stats.placement!;
  expect(p.mode).toBe('count');
  expect(p.ranks.map((x) => [x.spec, x.adapter, x.heads])).toEqual([['default', SWIFTSHADER, [0, 4]], ['default', SWIFTSHADER, [4, 8]]]);
  expect(p.fractions).toEqual([0.5, 0.5]);
});

test('a list of specs: each rank asks for its own adapter (power preference, CPU fallback)', async ({ harness }) => {
  const r = await runGenerate(harness, { ...base_, devices: [{ powerPreference: 'high-performance' }, { forceFallbackAdapter: true }] });
  expect(r.tokens).toEqual(want);
  const p = r.stats.placement!;
  expect(p.mode).toBe('list');
  expect(p.ranks.map((x) => x.spec)).toEqual(['high-performance', 'fallback']);
  expect(p.ranks.map((x) => x.adapter)).toEqual([SWIFTSHADER, SWIFTSHADER]);
  expect(p.reason).toContain('one per device spec (high-performance, fallback)');
});

test('a filter on adapter.info picks the matching adapter; one that matches nothing is AdapterNotFoundError', async ({ harness }) => {
  const r = await runGenerate(harness, { ...base_, devices: [{ info: { architecture: 'SwiftShader' } }, { info: { vendor: 'goog' } }] });
  expect(r.tokens).toEqual(want);
  expect(r.stats.placement!.ranks.map((x) => x.spec)).toEqual(['architecture~SwiftShader', 'vendor~goog']);
  const err = await runGenerate(harness, { ...base_, devices: [{ info: { vendor: 'nvidia' } }] }).then(() => null, (e: Error & { code?: string }) => e);
  expect(err?.name).toBe('AdapterNotFoundError');
  expect(err?.code).toBe('NO_ADAPTER');
  expect(err?.message).toContain(`the browser offered ${SWIFTSHADER}`);
});

test('contradicting options are InvalidArgumentError', async ({ harness }) => {
  const err = await runGenerate(harness, { ...base_, tp: 4, devices: 2 }).then(() => null, (e: Error & { code?: string }) => e);
  expect(err?.name).toBe('InvalidArgumentError');
  expect(err?.message).toContain('devices says 2 ranks but tensorParallel says 4');
});

test('auto on this machine (SwiftShader only) picks CPU ranks, the degree chosen by timing each, and stats() says why', async ({ harness }) => {
  const r = await runGenerate(harness, { ...base_, devices: 'auto' });
  expect(r.tokens).toEqual(want);
  const p = r.stats.placement!;
  expect(p.mode).toBe('auto');
  expect(p.reason).toContain(`no GPU: the WebGPU adapter, ${SWIFTSHADER}, computes on the CPU: CPU ranks (WebAssembly SIMD), up to one per core`);
  const cores = await harness.page.evaluate(() => navigator.hardwareConcurrency);
  const degrees = [1, 2, 4, 8].filter((d) => d <= cores);
  const t = p.timing!;
  expect(t.candidates.map((c) => c.label)).toEqual(degrees.map((d) => `${d} CPU rank${d === 1 ? '' : 's'}`));
  expect(t.steps).toBe(4);
  for (const c of t.candidates) expect(c.msPerStep).toBeGreaterThan(0);
  console.log(`auto on CPU ranks: ${t.candidates.map((c) => `${c.label} ${c.msPerStep.toFixed(2)} ms/step`).join(', ')}; chose ${t.candidates[t.chosen]!.label}; ${t.totalMs.toFixed(0)} ms to choose`);
  expect(r.tp).toBe(degrees[t.chosen]);
  expect(p.reason).toMatch(new RegExp(`: ${t.candidates[t.chosen]!.label}$`));
  expect(p.ranks.map((x) => [x.backend, x.spec, x.adapter])).toEqual(Array.from({ length: r.tp }, () => ['cpu', 'cpu', CPU]));
  expect(r.stats.ranks.map((x) => x.backend)).toEqual(Array.from({ length: r.tp }, () => 'cpu'));
});

test('auto on a GPU with a spare core: GPU alone is timed against GPU + a CPU rank split by measured speed', async ({ faked }) => {
  await faked.page.evaluate(() => ((window as unknown as { __gpuFake: object }).__gpuFake = { real: true }));
  const r = await runGenerate(faked, { ...base_, devices: 'auto' });
  expect(r.tokens).toEqual(want);
  const p = r.stats.placement!;
  expect(p.reason).toContain(`a GPU (${FAKE_GPU_NAME}) and 1 spare core: CPU ranks join only if that makes a step faster`);
  const t = p.timing!;
  expect(t.candidates.map((c) => [c.label, c.backends])).toEqual([['GPU alone', ['gpu']], ['GPU + 1 CPU rank', ['gpu', 'cpu']]]);
  console.log(`auto on a GPU and a core: ${t.candidates.map((c) => `${c.label} ${c.msPerStep.toFixed(2)} ms/step`).join(', ')}; chose ${t.candidates[t.chosen]!.label}; ${t.totalMs.toFixed(0)} ms to choose`);
  expect(p.ranks.map((x) => x.backend)).toEqual(t.candidates[t.chosen]!.backends);
  expect(r.stats.ranks.map((x) => x.backend)).toEqual(t.candidates[t.chosen]!.backends);
  if (t.chosen === 1) {
    expect(p.split).toBe('calibrated');
    expect(p.adapters).toEqual([FAKE_GPU_NAME, CPU]);
  }
});

test('auto with two distinct adapters: one rank each, split by measuring them, in whole heads', async ({ faked }) => {
  await faked.page.evaluate(async () => {
    await window.tp.engine.disposeAll();
    (window as unknown as { __gpuFake: object }).__gpuFake = { real: true, lowPowerIsOther: true };
  });
  const r = await runGenerate(faked, { ...base_, devices: 'auto' });
  expect(r.tokens).toEqual(want);
  expect(r.tp).toBe(2);
  const p = r.stats.placement!;
  expect(p.adapters).toEqual([FAKE_GPU_NAME, 'fake-igpu / fake / second adapter (test)']);
  expect(p.reason).toContain('2 distinct adapters');
  expect(p.split).toBe('calibrated');
  expect(p.calibrationMs).toHaveLength(2);
  console.log(`calibration ms per gemv: ${p.calibrationMs!.map((x) => x.toFixed(3)).join(', ')}; heads ${p.ranks.map((x) => x.heads[1] - x.heads[0]).join('/')}`);
  for (const ms of p.calibrationMs!) expect(ms).toBeGreaterThan(0);
  expect(p.ranks.map((x) => x.spec)).toEqual(['high-performance', 'low-power']);
  // Whole heads: the fractions are multiples of 1/8 that cover all 8 heads.
  for (const f of p.fractions) expect(Number.isInteger(f * 8)).toBe(true);
  expect(p.fractions.reduce((a, b) => a + b, 0)).toBe(1);
  expect(p.ranks[1]!.heads[1]).toBe(8);
});

test('auto on one adapter whose limit is too small for TP=1 picks the smallest degree that fits', async ({ faked }) => {
  // One layer's KV cache: 4 slots × 4 KV heads × 512 positions × 8 floats = 262144 bytes at TP=1.
  await faked.page.evaluate(async () => {
    await window.tp.engine.disposeAll();
    (window as unknown as { __gpuFake: object }).__gpuFake = { real: true, limit: 200_000 };
  });
  const r = await runGenerate(faked, { ...base_, devices: 'auto' });
  expect(r.tokens).toEqual(want);
  expect(r.tp).toBe(2);
  expect(r.stats.placement!.reason).toContain('at TP=1 the KV cache of one layer needs 262144 bytes, over its limit of 200000: TP=2');
  // Both of the two cores hold a GPU rank, so no CPU rank is tried beside them.
  expect(r.stats.placement!.reason).toContain('no core is left for a CPU rank');
  expect(r.stats.placement!.timing).toBeUndefined();
});

test('the demo shows the placement "auto" chose (CPU ranks here) and each rank\'s device', async ({ harness }) => {
  const page = await harness.browser.context.newPage();
  try {
    await page.goto(`${harness.server.url}/index.html`);
    await expect(page.locator('#default-status')).toContainText('Available', { timeout: 60_000 });
    await page.selectOption('#devices', 'auto');
    await page.selectOption('#tp', 'auto');
    await page.fill('#prompt', 'Once upon a time');
    await page.fill('#temperature', '0');
    await page.fill('#max-tokens', '8');
    await page.click('#generate');
    await expect(page.locator('body')).toHaveAttribute('data-state', 'done', { timeout: 180_000 });
    await expect(page.locator('#placement-info')).toBeVisible();
    await expect(page.locator('#placement-info')).toContainText(`Devices: no GPU: the WebGPU adapter, ${SWIFTSHADER}, computes on the CPU: CPU ranks`);
    const rows = page.locator('#ranks-body tr');
    const n = await rows.count();
    expect([1, 2]).toContain(n);
    await expect(page.locator('#engine-info')).toContainText(`TP=${n}`);
    for (let i = 0; i < n; i++) await expect(rows.nth(i).locator('td').nth(1)).toContainText('WebAssembly SIMD');
  } finally {
    await page.close();
  }
});
