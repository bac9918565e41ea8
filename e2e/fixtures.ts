import { test as base } from '@playwright/test';
import { openHarness, type Harness } from '../src/cli/browser.js';
import { TEST_PAGE } from '../test-support/test-page.js';

/**
 * `harness`: one headless Chromium with WebGPU for the whole worker, on the harness page.
 * A missing Chromium or adapter throws here, failing the tests: they are never skipped.
 */
export const test = base.extend<object, { harness: Harness }>({
  harness: [
    async ({}, use) => {
      const h = await openHarness({ path: TEST_PAGE });
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

/**
 * `counted`: like `harness`, on a page opened with `initScript` (e.g. code that counts what the
 * workers do, from outside the engine).
 */
export function withInitScript(initScript: string) {
  return base.extend<object, { counted: Harness }>({
    counted: [
      async ({}, use) => {
        const h = await openHarness({ path: TEST_PAGE, initScript });
        try {
          await use(h);
        } finally {
          await h.close();
        }
      },
      { scope: 'worker', timeout: 120_000 },
    ],
  });
}
