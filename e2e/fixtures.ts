import { test as base } from '@playwright/test';
import { openHarness, type Harness } from '../src/cli/browser.js';

/**
 * `harness`: one headless Chromium with WebGPU for the whole worker, on the harness page.
 * A missing Chromium or adapter throws here, failing the tests: they are never skipped.
 */
export const test = base.extend<object, { harness: Harness }>({
  harness: [
    async ({}, use) => {
      const h = await openHarness();
      try {
        await use(h);
      } finally {
        await h.close();
      }
    },
    { scope: 'worker', timeout: 120_000 },
  ],
});
export { expect } from '@playwright/test';
