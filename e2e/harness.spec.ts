import { test, expect } from './fixtures.js';

test('harness page is cross-origin isolated and has a WebGPU adapter', async ({ harness }) => {
  const info = await harness.page.evaluate(async () => {
    const adapter = await navigator.gpu.requestAdapter();
    return { isolated: crossOriginIsolated, sab: typeof SharedArrayBuffer, arch: adapter?.info.architecture };
  });
  expect(info.isolated).toBe(true);
  expect(info.sab).toBe('function');
  expect(info.arch).toBeTruthy();
});
