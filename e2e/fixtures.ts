import { test as base, type TestInfo } from '@playwright/test';
import { openHarness, type Harness } from '../src/cli/browser.js';
import { TEST_PAGE } from '../test-support/test-page.js';

/** Harnesses on pages opened with an init script, kept for the tests of one spec file. */
interface ScriptedHarnesses {
  /** The harness of `file` with `initScript`, opened on first use. */
  get(file: string, initScript: string): Promise<Harness>;
  /** Closes the harnesses of every file but `file`. */
  release(file: string): Promise<void>;
}

function scriptedHarnesses(): ScriptedHarnesses & { closeAll(): Promise<void> } {
  const open = new Map<string, { file: string; harness: Promise<Harness> }>();
  const close = async (keep?: string) => {
    for (const [key, h] of [...open]) {
      if (h.file === keep) continue;
      open.delete(key);
      await (await h.harness.catch(() => undefined))?.close();
    }
  };
  return {
    get(file, initScript) {
      const key = JSON.stringify([file, initScript]);
      let h = open.get(key);
      if (!h) open.set(key, (h = { file, harness: openHarness({ path: TEST_PAGE, initScript }) }));
      return h.harness;
    },
    release: (file) => close(file),
    closeAll: () => close(),
  };
}

/**
 * `harness`: one headless Chromium with WebGPU for the whole worker, on the harness page.
 * A missing Chromium or adapter throws here, failing the tests: they are never skipped.
 *
 * Every spec takes `test` from here, so that all of them share one set of worker fixtures and
 * Playwright runs file after file in the same two workers instead of starting a worker process
 * for each set. Pages with an init script (`withInitScript`, `scriptedHarness`) are therefore
 * test fixtures over `scripted`, which keeps each file's own browser for that file's tests only,
 * as a worker of its own did.
 */
export const test = base.extend<{ scriptedRelease: void }, { harness: Harness; scripted: ScriptedHarnesses }>({
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
  scripted: [
    async ({}, use) => {
      const s = scriptedHarnesses();
      try {
        await use(s);
      } finally {
        await s.closeAll();
      }
    },
    { scope: 'worker', timeout: 120_000 },
  ],
  // A file's scripted browser closes when the next file's first test starts.
  scriptedRelease: [
    async ({ scripted }, use, testInfo) => {
      await scripted.release(testInfo.file);
      await use();
    },
    { auto: true },
  ],
});
export { expect } from '@playwright/test';

/** A test fixture: the harness of this spec file on a page opened with `initScript`. */
export function scriptedHarness(initScript: string) {
  return async ({ scripted }: { scripted: ScriptedHarnesses }, use: (h: Harness) => Promise<void>, testInfo: TestInfo): Promise<void> => {
    await use(await scripted.get(testInfo.file, initScript));
  };
}

/**
 * `counted`: like `harness`, on a page opened with `initScript` (e.g. code that counts what the
 * workers do, from outside the engine).
 */
export function withInitScript(initScript: string) {
  return test.extend<{ counted: Harness }>({ counted: scriptedHarness(initScript) });
}
